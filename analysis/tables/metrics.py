"""Per-run measurements: the quantities the group tables aggregate over repeats."""

from __future__ import annotations

import math

import pandas as pd

from analysis.load import TRAIT_COLUMNS, Runs
from analysis.tables.common import round_level
from analysis.tables.constants import DEFAULT_TARGET_FRACTION, GROUP
from analysis.windows import applied_windows


def _train_span(steps: pd.DataFrame) -> tuple[float, float]:
    s = steps[steps["rank"] == steps["rank"].min()]
    if s.empty:
        return math.nan, math.nan
    return float(s["t_start_s"].min()), float((s["t_start_s"] + s["step_ms"] / 1000.0).max())


def _bursts_during(w: pd.DataFrame, t_first: float, t_last: float, r: pd.DataFrame) -> int:
    """Applied events overlapping the measured span (the steps, else the rounds): the schedule
    runs past the last step, and those bursts hit nothing."""
    if math.isnan(t_first) and not r.empty:
        t_first, t_last = float(r["t_start_s"].min()), float(r["t_end_s"].max())
    if math.isnan(t_first):
        return len(w)
    return int(((w["start_s"] < t_last) & (w["end_s"] > t_first)).sum())


def run_metrics(runs: Runs, target_acc: float | None = None) -> pd.DataFrame:
    """One row per run: the per-run quantities the tables aggregate over repeats, with the
    run's identity, its transport's traits and its preset's role (TRAIT_COLUMNS)."""
    rl = round_level(runs)
    windows = applied_windows(runs.bursts)
    rows = []
    for info in runs.runs.itertuples(index=False):
        r = rl[rl["run_id"] == info.run_id]
        s = runs.steps[runs.steps["run_id"] == info.run_id]
        e = runs.evals[runs.evals["run_id"] == info.run_id].sort_values("step")
        t_first, t_last = _train_span(s)
        train_s = t_last - t_first if not math.isnan(t_first) else float(info.wall_s or math.nan)
        origin = t_first if not math.isnan(t_first) else float(info.t0_s or math.nan)
        tta = math.nan
        if target_acc is not None and not e.empty:
            hit = e[e["test_acc"] >= target_acc]
            if not hit.empty:
                tta = float(hit["t_s"].iloc[0]) - origin
        n_steps = int(s["step"].nunique()) if not s.empty else 0
        n_bursts = _bursts_during(windows[windows["run_id"] == info.run_id], t_first, t_last, r)
        inb, outb = r[r["in_burst"]], r[~r["in_burst"]]
        wait_share = (r["cpu_wait_ms"] / r["latency_ms"].where(r["latency_ms"] > 0)).median()
        rows.append(
            {
                "run_id": info.run_id,
                **{k: getattr(info, k) for k in GROUP},
                "transport": info.transport,
                "repeat": info.repeat,
                "status": info.status,
                "unfaithful": bool(info.unfaithful),
                "rejected": int(info.rejected),
                "rounds": len(r),
                "burst_rounds": len(inb),
                "burst_mean_ms": float(inb["latency_ms"].mean()) if len(inb) else math.nan,
                "nonburst_mean_ms": float(outb["latency_ms"].mean()) if len(outb) else math.nan,
                "loss_in": float(inb["delivered_loss"].mean()) if len(inb) else math.nan,
                "loss_out": float(outb["delivered_loss"].mean()) if len(outb) else math.nan,
                "loss_mean": float(r["delivered_loss"].mean()) if len(r) else math.nan,
                "eps_mean": float(r["epsilon"].mean()) if len(r) else math.nan,
                "critical_share": (
                    float((r["train_phase"] == "critical").mean()) if len(r) else math.nan
                ),
                "nacks": int(r["nacks"].sum()),
                "retx_pkts": int(r["retx_pkts"].sum()),
                "cap_hits": int(r["cap_hit"].sum()),
                "cap_hit_frac": float(r["cap_hit"].mean()) if len(r) else math.nan,
                "cpu_wait_share": float(wait_share) if len(r) else math.nan,
                "train_s": train_s,
                "tta_s": tta,
                "final_acc": float(e["test_acc"].iloc[-1]) if not e.empty else math.nan,
                "drift_max": float(e["replica_drift"].max()) if not e.empty else math.nan,
                "steps": n_steps,
                "bursts": n_bursts,
                "bursts_per_100_steps": 100.0 * n_bursts / n_steps if n_steps else math.nan,
                "comm_fraction": (
                    float(s["comm_ms"].sum() / s["step_ms"].sum())
                    if not s.empty and s["step_ms"].sum() > 0
                    else math.nan
                ),
                **{k: getattr(info, k) for k in TRAIT_COLUMNS},
            }
        )
    return pd.DataFrame(rows)


def default_target(metrics: pd.DataFrame) -> float | None:
    """95% of the lowest group-mean final accuracy of the ok runs: a target every group can be
    timed to."""
    acc = metrics[metrics["status"] == "ok"].groupby(GROUP)["final_acc"].mean().dropna()
    if acc.empty:
        return None
    return round(DEFAULT_TARGET_FRACTION * float(acc.min()), 4)
