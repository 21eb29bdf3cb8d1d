"""Per-run measurements: the quantities the group tables aggregate over repeats.

Times: `train_s` is compute plus communication, the sum of rank 0's step times (what the
transport can shorten); `eval_s` is the evaluations (drift and test pass), each from the end
of the step before it to its record; `span_s` is rank 0's first step start to its last step
end, everything between steps included (evaluations, phase checks, round signals)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from analysis.load import TRAIT_COLUMNS, Runs
from analysis.tables.common import round_level
from analysis.tables.constants import GROUP
from analysis.windows import applied_windows


def _lead_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """Rank 0's steps (the lowest rank recorded) in time order, with their end `t_end_s`."""
    s = steps[steps["rank"] == steps["rank"].min()].sort_values("t_start_s")
    return s.assign(t_end_s=s["t_start_s"] + s["step_ms"] / 1000.0)


def _train_span(s: pd.DataFrame) -> tuple[float, float]:
    if s.empty:
        return math.nan, math.nan
    return float(s["t_start_s"].min()), float(s["t_end_s"].max())


def _eval_spans(s: pd.DataFrame, e: pd.DataFrame) -> np.ndarray:
    """Each evaluation's span in s: from the end of the last step that ended before its record
    to the record (the worker evaluates between steps, and records when done)."""
    if s.empty or e.empty:
        return np.array([])
    ends = np.sort(s["t_end_s"].to_numpy())
    t = e["t_s"].to_numpy()
    k = np.searchsorted(ends, t, side="right") - 1
    start = np.where(k >= 0, ends[np.clip(k, 0, None)], t)
    span = t - start
    return np.where(span < 1e-6, 0.0, span)  # under a microsecond: the sum's rounding, not time


def _compute_until(s: pd.DataFrame, t: float) -> float:
    """Compute plus communication (s) of the steps that ended by t."""
    return float(s.loc[s["t_end_s"] <= t + 1e-9, "step_ms"].sum() / 1000.0)


def _bursts_during(w: pd.DataFrame, t_first: float, t_last: float, r: pd.DataFrame) -> int:
    """Applied events overlapping the measured span (the steps, else the rounds): the schedule
    runs past the last step, and those bursts hit nothing."""
    if math.isnan(t_first) and not r.empty:
        t_first, t_last = float(r["t_start_s"].min()), float(r["t_end_s"].max())
    if math.isnan(t_first):
        return len(w)
    return int(((w["start_s"] < t_last) & (w["end_s"] > t_first)).sum())


def run_metrics(runs: Runs, target_acc: float | Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per run: the per-run quantities the tables aggregate over repeats, with the
    run's identity, its transport's traits and its preset's role (TRAIT_COLUMNS).
    target_acc: one accuracy for every run, or one per run_id (`targets.accuracy_targets`);
    `tta_s` is the compute plus communication until the first evaluation at or above it."""
    rl = round_level(runs)
    windows = applied_windows(runs.bursts)
    rows = []
    for info in runs.runs.itertuples(index=False):
        r = rl[rl["run_id"] == info.run_id]
        s = runs.steps[runs.steps["run_id"] == info.run_id]
        e = runs.evals[runs.evals["run_id"] == info.run_id].sort_values("step")
        lead = _lead_steps(s)
        t_first, t_last = _train_span(lead)
        wall = float(info.wall_s or math.nan)
        span_s = t_last - t_first if not math.isnan(t_first) else wall
        train_s = float(lead["step_ms"].sum() / 1000.0) if not lead.empty else wall
        target = target_acc.get(info.run_id) if isinstance(target_acc, Mapping) else target_acc
        target = math.nan if target is None else float(target)
        tta = math.nan
        if not math.isnan(target) and not e.empty:
            hit = e[e["test_acc"] >= target]
            if not hit.empty:
                tta = _compute_until(lead, float(hit["t_s"].iloc[0]))
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
                "eval_s": float(_eval_spans(lead, e).sum()) if not e.empty else math.nan,
                "span_s": span_s,
                "target_acc": target,
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
