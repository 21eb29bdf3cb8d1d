"""The report's tables, from loaded runs: latency, comparisons, events, paper, timeout axis,
training, phase ablation, loss, validity, sham shift.

Definitions (one place, so every table agrees):
- A round is the `total` rows of one (run, round), warm-up rounds excluded; its latency is the
  max over ranks (a round is done when its slowest rank is), its span min start..max end, its
  delivered loss the mean over ranks. In-burst by `analysis.windows` (applied times).
- Quantiles pool the rounds of all repeats of a group and follow the 10/(1-q) rule.
- Per-run figures (mean in-burst latency, training time, final accuracy, ...) aggregate over
  repeats to mean ± 95% CI. Comparisons pair repeats by repeat index when both sides have the
  same repeats (same seeds, hence the same bursts), else fall back to unpaired intervals.
- In-burst mean ratio = baseline's mean in-burst round latency / the transport's (a ratio of
  means, not the paper's statistic); end-to-end reduction = 1 - training time / baseline's.
  Baselines are the `tcp` and `optireduce` labels; the paper's ratios use `optireduce` labels
  only, never `tcp`.
- The paper's burst statistic is per event (`event_table`): the hit round's latency under the
  baseline over under the transport, paired by event on the same seed; its max over events
  is what the paper's "up to 5.88x" reports. A max has no confidence interval, so the tables
  give the number of events and seeds it is the max of.
- Training time = rank 0's first step start to its last step end (excludes set-up), falling
  back to run.json wall_s for a run without steps.
- Only runs whose status is ok are aggregated (`Runs.aggregated`): a failed, interrupted or
  still-running run measured part of an experiment (a shorter training, an earlier accuracy),
  so it appears per run (`runs`, `validity`) and is named in its group's `validity` cell
  ("left out: interrupted 1"), never averaged with complete runs.
- Every group table carries `validity`: "unfaithful k/n", "rejected datagrams k/n", ... so a run
  the emulator could not keep up with, or whose transport saw foreign datagrams, is visible
  wherever it was used.
- CSV columns are numbers or text, never both: a quantile column holds the quantile, or the
  maximum when there were too few samples, and its `*_rule` column says which.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.fidelity import sham_shift
from analysis.load import Runs, load_run, origins
from analysis.stats import Estimate, diff_ci, mean_ci, quantile, ratio_ci
from analysis.windows import applied_windows, in_burst

GROUP = ["workload", "label", "preset"]
BASELINE_TRANSPORTS = ("tcp", "optireduce")
PAPER_SYSTEM = "dblp"
PAPER_BASELINE = "optireduce"
#: optireduce's mode that adapts its timeout (under a hard cap); "fixed" waits for the cap.
ADAPTIVE_MODE = "adaptive"
#: dblp's ε policy when its phase detector runs (ε_critical in critical phases, else ε_stable).
PHASE_AWARE = "phase-aware"
#: Presets that impair no worker link: excluded from the paper's (bursty-network) ratios.
NON_BURST_PRESETS = ("none", "sham")
#: Published figures of the DBLP paper, both vs OptiReduce (its bounded-time baseline).
PUBLISHED = {"e2e_reduction_mean": 0.244, "e2e_reduction_max": 0.339, "event_ratio_max": 5.88}
DEFAULT_TARGET_FRACTION = 0.95
#: Quantiles of the per-event ratios the events table reports (the paper's "up to" is the max).
EVENT_QUANTILES = {"median": 0.5, "p90": 0.9, "max": 1.0}
#: The per-event statistic's columns, wherever it is shown (events, paper, timeout axis).
EVENT_STATS = ["events", "seeds", *(f"event_ratio_{k}" for k in EVENT_QUANTILES), "calm_ratio"]


def round_level(runs: Runs) -> pd.DataFrame:
    """One row per (run, round): latency (max over ranks), span, loss, in_burst, t_rel_s
    (seconds since the run's origin_s, see `analysis.load.origins`)."""
    r = runs.rounds
    r = r[(r["stage"] == "total") & ~r["is_warmup"].astype(bool)]
    cols = {
        "latency_ms": ("latency_ms", "max"),
        "t_start_s": ("t_start_s", "min"),
        "t_end_s": ("t_end_s", "max"),
        "delivered_loss": ("delivered_loss", "mean"),
        "epsilon": ("epsilon", "max"),
        "nacks": ("nacks", "sum"),
        "retx_pkts": ("retx_pkts", "sum"),
        "cap_hit": ("cap_hit", "any"),
        "cpu_wait_ms": ("cpu_wait_ms", "max"),
        "iter": ("iter", "min"),
        "train_phase": ("train_phase", "first"),
    }
    g = r.groupby(["run_id", "round"], as_index=False).agg(**cols)
    info = runs.runs[["run_id", *GROUP, "transport", "repeat", "status", "unfaithful"]]
    g = g.merge(info, on="run_id", how="left")
    g["in_burst"] = in_burst(g, runs.bursts).to_numpy()
    g["origin_s"] = g["run_id"].map(origins(runs)).astype("float64")
    g["t_rel_s"] = g["t_start_s"] - g["origin_s"]
    return g


def rejections_text(rejections: dict[str, int]) -> str:
    """ "source 3, nonfinite 1": rejected datagrams by reason, most frequent first."""
    items = sorted(((k, int(v)) for k, v in rejections.items() if v), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v}" for k, v in items)


def _flags(runs_df: pd.DataFrame, left_out: pd.DataFrame | None = None) -> str:
    """e.g. "unfaithful 1/3, rejected datagrams 1/3, left out: interrupted 1"; empty when every
    run was ok, fed and clean. left_out: the group's runs that were not aggregated."""
    n = len(runs_df)
    out = []
    k = int(runs_df["unfaithful"].astype(bool).sum())
    if k:
        out.append(f"unfaithful {k}/{n}")
    if "rejected" in runs_df:
        k = int((runs_df["rejected"] > 0).sum())
        if k:
            out.append(f"rejected datagrams {k}/{n}")
    for status in ("failed", "interrupted", "running"):
        k = int((runs_df["status"] == status).sum())
        if k:
            out.append(f"{status} {k}/{n}")
    if left_out is not None and len(left_out):
        counts = left_out["status"].value_counts()
        out.append("left out: " + ", ".join(f"{s} {k}" for s, k in counts.items()))
    return ", ".join(out)


def _left_of(left_out: pd.DataFrame | None, **eq: object) -> pd.DataFrame | None:
    """The left-out runs matching eq (e.g. workload=..., label=..., preset=...)."""
    if left_out is None or left_out.empty:
        return None
    m = pd.Series(True, index=left_out.index)
    for k, v in eq.items():
        m &= left_out[k].isin(v) if isinstance(v, (list, tuple, set)) else left_out[k] == v
    return left_out[m]


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
    """One row per run: the per-run quantities the tables aggregate over repeats."""
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


def _est(prefix: str, e: Estimate) -> dict:
    return {prefix: e.mean, f"{prefix}_lo": e.lo, f"{prefix}_hi": e.hi}


def latency_table(
    runs: Runs, rl: pd.DataFrame | None = None, left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per group: round latency p50/p99/max in and outside bursts (pooled over repeats).

    p50_*_ms / p99_*_ms hold the quantile, or the maximum when there were too few rounds for
    it, and p50_*_rule / p99_*_rule say which ("p99 (n=1200)", "max (n=59)", "none (n=0)")."""
    rl = round_level(runs) if rl is None else rl
    rows = []
    for key, g in rl.groupby(GROUP):
        row = dict(zip(GROUP, key, strict=True))
        row["runs"] = g["run_id"].nunique()
        for name, part in (("all", g), ("in", g[g["in_burst"]]), ("out", g[~g["in_burst"]])):
            lat = part["latency_ms"].to_numpy()
            row[f"rounds_{name}"] = len(lat)
            for q in (0.50, 0.99):
                est = quantile(lat, q)
                row[f"p{100 * q:.0f}_{name}_ms"] = est.number
                row[f"p{100 * q:.0f}_{name}_rule"] = est.rule
            row[f"max_{name}_ms"] = float(lat.max()) if len(lat) else math.nan
        used = runs.runs[runs.runs["run_id"].isin(g["run_id"])]
        row["validity"] = _flags(used, _left_of(left_out, **dict(zip(GROUP, key, strict=True))))
        rows.append(row)
    return pd.DataFrame(rows)


def _paired(a: pd.DataFrame, b: pd.DataFrame, col: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """Values of col for two groups, paired by repeat when their repeats coincide."""
    a, b = a.dropna(subset=[col]), b.dropna(subset=[col])
    if len(a) > 0 and sorted(a["repeat"]) == sorted(b["repeat"]) and a["repeat"].is_unique:
        a, b = a.sort_values("repeat"), b.sort_values("repeat")
        return a[col].to_numpy(), b[col].to_numpy(), True
    return a[col].to_numpy(), b[col].to_numpy(), False


def _baselines(metrics: pd.DataFrame, transports: tuple[str, ...]) -> list[str]:
    """Labels of the runs whose transport is a baseline (e.g. "tcp", "tcp-rto5ms")."""
    return sorted(metrics.loc[metrics["transport"].isin(transports), "label"].unique())


def _reduction(a: pd.DataFrame, b: pd.DataFrame, col: str) -> tuple[Estimate, bool, float]:
    """1 - a/b of a time column (CI from the ratio's), whether repeats were paired, and the
    largest per-seed reduction (NaN unless paired)."""
    x, y, paired = _paired(a, b, col)
    if not (len(x) and len(y)):
        return _nan_est(), paired, math.nan
    r = ratio_ci(x, y, paired=paired)
    best = float(np.max(1 - x / y)) if paired else math.nan
    return Estimate(1 - r.mean, 1 - r.hi, 1 - r.lo, r.n), paired, best


def _pair_identity(workload, preset, label, base, a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """The key columns of a transport-vs-baseline row (comparisons, events)."""
    return {
        "workload": workload,
        "preset": preset,
        "label": label,
        "transport": a["transport"].iloc[0],
        "baseline": base,
        "baseline_transport": b["transport"].iloc[0],
    }


def comparisons(
    metrics: pd.DataFrame,
    baseline_transports=BASELINE_TRANSPORTS,
    left_out: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per (workload, preset, label, baseline): in-burst mean ratio, reductions of training
    time and of time-to-accuracy, Δ final accuracy."""
    rows = []
    bases = _baselines(metrics, baseline_transports)
    for (workload, preset), g in metrics.groupby(["workload", "preset"]):
        for base in bases:
            b = g[g["label"] == base]
            if b.empty:
                continue
            for label, a in g.groupby("label"):
                if label == base:
                    continue
                x, y, p_burst = _paired(a, b, "burst_mean_ms")
                burst = ratio_ci(y, x, paired=p_burst) if len(x) and len(y) else _nan_est()
                red, p_time, red_max = _reduction(a, b, "train_s")
                tta, _, _ = _reduction(a, b, "tta_s")
                x, y, p_acc = _paired(a, b, "final_acc")
                dacc = diff_ci(x, y, paired=p_acc) if len(x) and len(y) else _nan_est()
                rows.append(
                    {
                        **_pair_identity(workload, preset, label, base, a, b),
                        **_est("burst_mean_ratio", burst),
                        **_est("e2e_reduction", red),
                        "e2e_reduction_max": red_max,
                        **_est("tta_reduction", tta),
                        **_est("acc_delta", dacc),
                        "n": burst.n or red.n,
                        "paired": p_burst and p_time,
                        "validity": _flags(
                            pd.concat([a, b]),
                            _left_of(
                                left_out, workload=workload, preset=preset, label=(label, base)
                            ),
                        ),
                    }
                )
    return pd.DataFrame(rows, columns=_COMPARISON_COLUMNS)


_COMPARISON_COLUMNS = [
    "workload",
    "preset",
    "label",
    "transport",
    "baseline",
    "baseline_transport",
    "burst_mean_ratio",
    "burst_mean_ratio_lo",
    "burst_mean_ratio_hi",
    "e2e_reduction",
    "e2e_reduction_lo",
    "e2e_reduction_hi",
    "e2e_reduction_max",
    "tta_reduction",
    "tta_reduction_lo",
    "tta_reduction_hi",
    "acc_delta",
    "acc_delta_lo",
    "acc_delta_hi",
    "n",
    "paired",
    "validity",
]


def _nan_est() -> Estimate:
    return Estimate(math.nan, math.nan, math.nan, 0)


def _group_table(
    metrics: pd.DataFrame, columns: dict[str, str], left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Mean ± CI over repeats of each metric column, per group (columns: metric -> output)."""
    rows = []
    for key, g in metrics.groupby(GROUP):
        row = dict(zip(GROUP, key, strict=True))
        row["runs"] = len(g)
        for col, out in columns.items():
            row.update(_est(out, mean_ci(g[col].to_numpy())))
        row["validity"] = _flags(g, _left_of(left_out, **dict(zip(GROUP, key, strict=True))))
        rows.append(row)
    return pd.DataFrame(rows)


def training_table(
    metrics: pd.DataFrame, target_acc: float | None, left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per group: training time, time-to-accuracy at the target, final accuracy, comm share.
    tta_reached: how many of the group's `runs` reached the target (NaN without evaluations)."""
    t = _group_table(
        metrics,
        {"train_s": "train_s", "tta_s": "tta_s", "final_acc": "final_acc"},
        left_out,
    )
    if t.empty:
        return t

    def reached_of(g: pd.DataFrame) -> float:
        if target_acc is None or g["final_acc"].isna().all():
            return math.nan  # no evaluations (e.g. the allreduce workload): nothing to reach
        return float(g["tta_s"].notna().sum())

    reached = metrics.groupby(GROUP)[["tta_s", "final_acc"]].apply(reached_of)
    comm = metrics.groupby(GROUP)["comm_fraction"].mean()
    t = t.merge(reached.rename("tta_reached").reset_index(), on=GROUP)
    t = t.merge(comm.rename("comm_fraction").reset_index(), on=GROUP)
    t.insert(len(GROUP) + 1, "target_acc", target_acc if target_acc is not None else math.nan)
    return t


def loss_table(metrics: pd.DataFrame, left_out: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group: delivered loss in/out of bursts, NACKs, cap hits, drift, bursts per 100 steps."""
    return _group_table(
        metrics,
        {
            "loss_in": "loss_in",
            "loss_out": "loss_out",
            "nacks": "nacks_per_run",
            "retx_pkts": "retx_per_run",
            "cap_hits": "cap_hits_per_run",
            "cap_hit_frac": "cap_hit_frac",
            "drift_max": "replica_drift_max",
            "bursts_per_100_steps": "bursts_per_100_steps",
        },
        left_out,
    )


def validity_table(runs: Runs, metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per run: status, whether it was aggregated, reason, the fidelity verdict, the
    time dilation it ran at, oversubscribed, rejected datagrams (total and by reason), CPU-wait
    share, warnings."""
    cols = ["run_id", *GROUP, "repeat", "seed", "status", "reason", "unfaithful"]
    v = runs.runs[[*cols, "dilation", "oversubscribed", "rejected", "warnings"]].copy()
    v.insert(v.columns.get_loc("status") + 1, "aggregated", v["status"] == "ok")
    v.insert(
        v.columns.get_loc("rejected") + 1,
        "rejections",
        runs.runs["rejections"].map(rejections_text),
    )
    v = v.merge(metrics[["run_id", "cpu_wait_share", "rounds", "steps"]], on="run_id", how="left")
    return v.sort_values(GROUP + ["repeat"], ignore_index=True)


def paper_comparisons(comp: pd.DataFrame) -> pd.DataFrame:
    """The comparison rows the paper's ratios use: the published system (`dblp`, any of its
    variants) vs an optireduce label, under a preset that impairs the network. Other
    transports vs optireduce stay in the comparisons table, not beside published figures."""
    return comp[
        (comp["baseline_transport"] == PAPER_BASELINE)
        & (comp["transport"] == PAPER_SYSTEM)
        & ~comp["preset"].isin(NON_BURST_PRESETS)
    ]


#: The paper table's columns: this testbed's figures, then the published ones beside them.
_PAPER_COLUMNS = [
    "workload",
    "preset",
    "label",
    "baseline",
    "e2e_reduction",
    "e2e_reduction_lo",
    "e2e_reduction_hi",
    "e2e_reduction_max",
    "n",
    "acc_delta",
    "acc_delta_lo",
    "acc_delta_hi",
    *EVENT_STATS,
    *(f"published_{k}" for k in PUBLISHED),
    "validity",
]


def paper_table(comp: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The paper's two statistics per (workload, bursty preset, dblp label, optireduce label),
    beside the published figures.

    End-to-end reduction: the comparisons' mean over repeats with its 95% CI, and its max over
    the seeds (paired by seed; the paper's 24.4% mean and 33.9% max are over its own
    settings). Δ final accuracy (system - baseline, with its CI) says whether the time was
    bought with accuracy.
    Burst statistic: the events table's per-event hit-round ratio, max / p90 / median over
    the events of `seeds` seeds, and the calm-round ratio; the max carries no CI.
    """
    keys = ["workload", "preset", "label", "baseline"]
    c = paper_comparisons(comp)
    cols = [*keys, "e2e_reduction", "e2e_reduction_lo", "e2e_reduction_hi", "e2e_reduction_max"]
    cols += ["n", "acc_delta", "acc_delta_lo", "acc_delta_hi", "validity"]
    t = c[cols].merge(events[[*keys, *EVENT_STATS]], on=keys, how="left")
    for name, value in PUBLISHED.items():
        t[f"published_{name}"] = value
    return t.sort_values(keys, ignore_index=True)[_PAPER_COLUMNS]


def probe_table(runs: Runs) -> pd.DataFrame:
    """Network-only probe runs (iperf3 / ping): throughput, loss and RTT in and outside bursts."""
    p = runs.probes
    cols = ["run_id", "probe", "preset", "bins", "bins_in_burst", "mbps_in", "mbps_out",
            "loss_in", "loss_out", "rtt_ms_in", "rtt_ms_out"]  # fmt: skip
    if p.empty:
        return pd.DataFrame(columns=cols)
    p = p.assign(in_burst=in_burst(p, runs.bursts).to_numpy())
    rows = []
    for (run_id, probe, preset), g in p.groupby(["run_id", "probe", "preset"]):
        inside, outside = g[g["in_burst"]], g[~g["in_burst"]]
        row = {"run_id": run_id, "probe": probe, "preset": preset, "bins": len(g),
               "bins_in_burst": len(inside)}  # fmt: skip
        for col, name in (("mbps", "mbps"), ("loss", "loss"), ("rtt_ms", "rtt_ms")):
            row[f"{name}_in"] = inside[col].mean() if len(inside) else math.nan
            row[f"{name}_out"] = outside[col].mean() if len(outside) else math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def event_rounds(rl: pd.DataFrame, bursts: pd.DataFrame) -> pd.DataFrame:
    """Per run and applied burst event, the round it hit: of the rounds (max over ranks) whose
    span overlaps the event's window, the slowest. Columns run_id, event_id, round,
    latency_ms. An event that no round overlaps (between rounds, after the run) has no row."""
    out = []
    windows = applied_windows(bursts)
    for run_id, ev in windows.groupby("run_id"):
        r = rl[rl["run_id"] == run_id]
        if r.empty:
            continue
        s, e = r["t_start_s"].to_numpy(), r["t_end_s"].to_numpy()
        lat, rnd = r["latency_ms"].to_numpy(), r["round"].to_numpy()
        for event_id, ws, we in ev[["event_id", "start_s", "end_s"]].itertuples(index=False):
            hit = np.flatnonzero((s < we) & (e > ws))
            if hit.size:
                k = hit[np.argmax(lat[hit])]
                out.append((run_id, int(event_id), int(rnd[k]), float(lat[k])))
    return pd.DataFrame(out, columns=["run_id", "event_id", "round", "latency_ms"])


def event_table(
    rl: pd.DataFrame, bursts: pd.DataFrame, baseline_transports=BASELINE_TRANSPORTS
) -> pd.DataFrame:
    """The paper's single-round statistic: per burst event, the hit round's latency under the
    baseline over under the transport, paired by event on the same seed and repeat (same
    schedule, same event ids), reported as median, p90 and max over events, with the ratio of
    calm-round medians beside it (what the baseline costs when nothing bursts). `events`
    counts the paired events, `seeds` the repeats they came from."""
    hits = event_rounds(rl, bursts)
    cols = ["workload", "preset", "label", "transport", "baseline", "baseline_transport"]
    cols += EVENT_STATS
    if hits.empty:
        return pd.DataFrame(columns=cols)
    info = rl.drop_duplicates("run_id").set_index("run_id")
    hits = hits.join(info[["workload", "label", "preset", "transport", "repeat"]], on="run_id")
    calm = rl[~rl["in_burst"]].groupby("run_id")["latency_ms"].median()
    rows = []
    for (workload, preset), g in hits.groupby(["workload", "preset"]):
        bases = sorted(g.loc[g["transport"].isin(baseline_transports), "label"].unique())
        for base in bases:
            b = g[g["label"] == base]
            for label, a in g.groupby("label"):
                if label == base:
                    continue
                pair = a.merge(b, on=["repeat", "event_id"], suffixes=("", "_base"))
                if pair.empty:
                    continue
                ratio = pair["latency_ms_base"] / pair["latency_ms"]
                runs_a, runs_b = a["run_id"].unique(), b["run_id"].unique()
                calm_ratio = calm.reindex(runs_b).median() / calm.reindex(runs_a).median()
                rows.append(
                    {
                        **_pair_identity(workload, preset, label, base, a, b),
                        "events": len(pair),
                        "seeds": pair["repeat"].nunique(),
                        **{
                            f"event_ratio_{k}": float(ratio.quantile(q))
                            for k, q in EVENT_QUANTILES.items()
                        },
                        "calm_ratio": float(calm_ratio),
                    }
                )
    return pd.DataFrame(rows, columns=cols)


def run_params(runs: Runs) -> pd.DataFrame:
    """Per run, what its transport played by, from run.json `transport_params` (the spec only
    where the run.json does not say):

    - mode: optireduce's ("adaptive" | "fixed"; "" for other transports);
    - p50_ms, t_max_ms: the calibrated burst-free round (rank 0's view, agreed over ranks) and
      the hard cap, in the tables' emulated time (divided by the run's dilation); cap_x =
      t_max_ms / p50_ms as played, else the spec's requested `t_max_p50`; NaN when nothing was
      calibrated (tcp, an older run.json);
    - eps_policy, pinned_eps: dblp's ε policy, "phase-aware" or "ε pinned at X" (phase off:
      the pinned ε, which defaults to the stable-phase ε); "" and NaN for other transports.
    """
    rows = []
    cols = ["run_id", "transport", "transport_params", "spec", "dilation"]
    for run_id, transport, params, spec, dilation in runs.runs[cols].itertuples(index=False):
        config, phase = params.get("config") or {}, params.get("phase") or {}
        scale = max(float(dilation or 1.0), 1.0)
        p50, t_max = params.get("p50_ms"), params.get("t_max_ms")
        requested = spec.get("t_max_p50", config.get("t_max_p50"))
        cap_x = t_max / p50 if p50 and t_max else requested
        mode = config.get("optireduce_mode") or spec.get("optireduce_mode", ADAPTIVE_MODE)
        phased = phase.get("enabled", spec.get("phase", "on") != "off")
        pinned = phase.get("pinned_epsilon", spec.get("epsilon"))
        if pinned is None:
            pinned = phase.get("eps_stable")
        is_dblp = transport == PAPER_SYSTEM
        pinned_eps = float(pinned) if is_dblp and not phased and pinned is not None else math.nan
        rows.append(
            {
                "run_id": run_id,
                "mode": str(mode) if transport == PAPER_BASELINE else "",
                "p50_ms": float(p50) / scale if p50 else math.nan,
                "t_max_ms": float(t_max) / scale if t_max else math.nan,
                "cap_x": float(cap_x) if cap_x else math.nan,
                "eps_policy": _eps_policy(phased, pinned) if is_dblp else "",
                "pinned_eps": pinned_eps,
            }
        )
    return pd.DataFrame(rows, columns=_RUN_PARAMS)


_RUN_PARAMS = ["run_id", "mode", "p50_ms", "t_max_ms", "cap_x", "eps_policy", "pinned_eps"]


def _eps_policy(phased: bool, pinned: float | None) -> str:
    if phased:
        return PHASE_AWARE
    return f"ε pinned at {pinned:g}" if pinned is not None else "phase off"


#: The timeout-axis table's columns.
_TIMEOUT_COLUMNS = [
    "workload",
    "preset",
    "label",
    "baseline",
    "mode",
    "timeout_x",
    "cap_x",
    "hit_x",
    *EVENT_STATS,
]


def timeout_axis(
    rl: pd.DataFrame, bursts: pd.DataFrame, events: pd.DataFrame, params: pd.DataFrame
) -> pd.DataFrame:
    """The paper's per-event statistic against the baseline's timeout: per (workload, bursty
    preset, dblp label) with at least two optireduce labels, a row per optireduce label.

    cap_x: its hard cap over its calibrated calm p50 (median over its runs); hit_x: its median
    hit round over that p50, what a burst cost it; timeout_x, the x it is drawn at: cap_x for
    a fixed timeout, hit_x for the adaptive mode (whose cap is a ceiling it adapts under).
    Empty when no preset has several optireduce timeouts."""
    ev = events[
        (events["baseline_transport"] == PAPER_BASELINE)
        & (events["transport"] == PAPER_SYSTEM)
        & ~events["preset"].isin(NON_BURST_PRESETS)
    ]
    if ev.empty:
        return pd.DataFrame(columns=_TIMEOUT_COLUMNS)
    calm = rl[~rl["in_burst"]].groupby("run_id")["latency_ms"].median()
    per_run = params.set_index("run_id")
    p50 = per_run["p50_ms"].fillna(calm.reindex(per_run.index))  # measured, when not calibrated
    hits = event_rounds(rl, bursts)
    hits["hit_x"] = hits["latency_ms"] / hits["run_id"].map(p50)
    info = rl.drop_duplicates("run_id")[["run_id", *GROUP]]
    rows = []
    for _, g in ev.groupby(["workload", "preset", "label"]):
        if g["baseline"].nunique() < 2:
            continue
        for r in g.itertuples(index=False):
            runs_b = info.loc[
                (info["workload"] == r.workload)
                & (info["preset"] == r.preset)
                & (info["label"] == r.baseline),
                "run_id",
            ]
            modes = per_run.loc[per_run.index.isin(runs_b), "mode"]
            mode = modes.mode().iloc[0] if not modes.empty else ""
            cap_x = float(per_run.loc[per_run.index.isin(runs_b), "cap_x"].median())
            hit_x = float(hits.loc[hits["run_id"].isin(runs_b), "hit_x"].median())
            rows.append(
                {
                    **{k: getattr(r, k) for k in ("workload", "preset", "label", "baseline")},
                    "mode": mode,
                    "timeout_x": hit_x if mode == ADAPTIVE_MODE else cap_x,
                    "cap_x": cap_x,
                    "hit_x": hit_x,
                    **{k: getattr(r, k) for k in EVENT_STATS},
                }
            )
    t = pd.DataFrame(rows, columns=_TIMEOUT_COLUMNS)
    return t.sort_values(["workload", "preset", "label", "mode", "timeout_x"], ignore_index=True)


def timeout_reaching(axis: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per (workload, preset, label) of the timeout axis: the fixed timeout multiple at which
    the per-event max first reaches `level`, linearly interpolated between swept points
    (reached_x; NaN when it never does), the swept range, and the largest max and where."""
    cols = ["workload", "preset", "label", "reached_x", "swept_lo", "swept_hi", "best", "best_x"]
    rows = []
    fixed = axis[(axis["mode"] != ADAPTIVE_MODE) & axis["timeout_x"].notna()]
    for (workload, preset, label), g in fixed.groupby(["workload", "preset", "label"]):
        g = g.sort_values("timeout_x")
        x, y = g["timeout_x"].to_numpy(float), g["event_ratio_max"].to_numpy(float)
        reached = math.nan
        up = np.flatnonzero(y >= level)
        if up.size:
            i = int(up[0])
            reached = (
                x[0] if i == 0 else float(np.interp(level, y[i - 1 : i + 1], x[i - 1 : i + 1]))
            )
        k = int(np.nanargmax(y))
        rows.append((workload, preset, label, reached, x[0], x[-1], y[k], x[k]))
    return pd.DataFrame(rows, columns=cols)


#: The exact transports (nothing lost), in the order the ablation takes its reference from.
EXACT_TRANSPORTS = ("reliable", "tcp")
#: The pinned ε whose training time phase-aware dblp is held against: its stable-phase ε.
FAST_EPSILON = 0.2


def phase_ablation(
    metrics: pd.DataFrame, params: pd.DataFrame, left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """dblp's ε policies on training runs (runs with evaluations), beside tcp, reliable and
    optireduce: per (workload, preset, label) training time, time to target, final accuracy
    and mean delivered loss (mean ± 95% CI over seeds), share of rounds in a critical phase
    and mean ε; Δ final accuracy vs the exact reference (`exact_baseline`: reliable, else
    tcp) and training time over the dblp label with ε pinned at FAST_EPSILON
    (`time_vs_fast`), both paired by seed. Empty without a dblp training run."""
    kinds = (PAPER_SYSTEM, *EXACT_TRANSPORTS, PAPER_BASELINE)
    m = metrics[metrics["final_acc"].notna() & metrics["transport"].isin(kinds)]
    m = m.merge(params[["run_id", "eps_policy", "pinned_eps"]], on="run_id", how="left")
    rows = []
    for (workload, preset), g in m.groupby(["workload", "preset"]):
        if not (g["transport"] == PAPER_SYSTEM).any():
            continue
        exact_labels = [
            sorted(g.loc[g["transport"] == t, "label"].unique()) for t in EXACT_TRANSPORTS
        ]
        exact = next((labels[0] for labels in exact_labels if labels), "")
        fast = sorted(g.loc[np.isclose(g["pinned_eps"], FAST_EPSILON), "label"].unique())
        refs = {
            "acc_delta": (exact, "final_acc", diff_ci),
            "time_vs_fast": (fast[0] if fast else "", "train_s", ratio_ci),
        }
        for label, a in g.groupby("label"):
            row = {"workload": workload, "preset": preset, "label": label,
                   "transport": a["transport"].iloc[0], "eps_policy": a["eps_policy"].iloc[0],
                   "pinned_eps": a["pinned_eps"].iloc[0], "runs": len(a)}  # fmt: skip
            for col in ("train_s", "tta_s", "final_acc", "loss_mean"):
                row.update(_est(col, mean_ci(a[col].to_numpy())))
            row["critical_share"] = float(a["critical_share"].mean())
            row["eps_mean"] = float(a["eps_mean"].mean())
            for name, (ref, col, compare) in refs.items():
                est = _nan_est()
                if ref and ref != label:
                    x, y, paired = _paired(a, g[g["label"] == ref], col)
                    if len(x) and len(y):
                        est = compare(x, y, paired=paired)
                row.update(_est(name, est))
            row["exact_baseline"] = exact
            row["validity"] = _flags(
                a, _left_of(left_out, workload=workload, preset=preset, label=label)
            )
            rows.append(row)
    t = pd.DataFrame(rows, columns=_ABLATION_COLUMNS)
    order = t["transport"].map({k: i for i, k in enumerate(kinds)})
    return (
        t.assign(_o=order)
        .sort_values(["workload", "preset", "_o", "label"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


_ABLATION_COLUMNS = [
    "workload",
    "preset",
    "label",
    "transport",
    "eps_policy",
    "pinned_eps",
    "runs",
    *(
        f"{c}{s}"
        for c in ("train_s", "tta_s", "final_acc", "loss_mean")
        for s in ("", "_lo", "_hi")
    ),
    "critical_share",
    "eps_mean",
    *(f"acc_delta{s}" for s in ("", "_lo", "_hi")),
    *(f"time_vs_fast{s}" for s in ("", "_lo", "_hi")),
    "exact_baseline",
    "validity",
]


def sham_table(rl: pd.DataFrame, runs: Runs) -> pd.DataFrame:
    """The sham control per (workload, label): calm-round p50 (median of the rounds outside
    burst windows, per run, then over runs) under `sham` against `none`, over the seeds that
    ran both (`seeds`); shift and the verdict from `fidelity.sham_shift`. Empty without a
    sham run beside a none run of the same label, workload and seed."""
    keys = ("workload", "label")
    info = runs.runs[["run_id", *keys, "preset", "seed"]]
    calm = rl[~rl["in_burst"]].groupby("run_id")["latency_ms"].median().rename("p50_ms")
    c = info[info["preset"].isin(("none", "sham"))].merge(calm.reset_index(), on="run_id")
    both = c.groupby([*keys, "seed"])["preset"].transform("nunique") == 2
    c = c[both]
    out = sham_shift(c, keys)
    seeds = c.groupby(list(keys))["seed"].nunique().rename("seeds").reset_index()
    out = out.merge(seeds, on=list(keys), how="left")
    return out[[*keys, "seeds", "none_p50_ms", "sham_p50_ms", "shift", "faithful"]]


def build_tables(runs: Runs, target_acc: float | None = None) -> dict[str, pd.DataFrame]:
    """Every report table, by name; target_acc None picks `default_target`.

    Group tables aggregate the ok runs only; `runs` (per-run measurements) and `validity`
    list every run, with its status."""
    if target_acc is None:
        target_acc = default_target(run_metrics(runs))
    all_metrics = run_metrics(runs, target_acc)
    metrics = all_metrics[all_metrics["status"] == "ok"]
    ok, left = runs.aggregated(), runs.left_out()
    comp = comparisons(metrics, left_out=left)
    rl = round_level(ok)
    events = event_table(rl, ok.bursts)
    params = run_params(ok)
    return {
        "latency": latency_table(ok, rl, left),
        "comparisons": comp,
        "paper": paper_table(comp, events),
        "events": events,
        "timeout_axis": timeout_axis(rl, ok.bursts, events, params),
        "training": training_table(metrics, target_acc, left),
        "phase_ablation": phase_ablation(metrics, params, left),
        "loss": loss_table(metrics, left),
        "validity": validity_table(runs, all_metrics),
        "sham_shift": sham_table(rl, ok),
        "probes": probe_table(ok),
        "runs": all_metrics,
    }


def summary(run_dir: Path) -> dict:
    """One run's end-to-end summary (the orchestrator's --json line).

    Every value is a number or None (no data, e.g. no burst rounds, no evaluations), so a
    program can read it; each quantile's `<name>_rule` says what the number is ("p50 (n=90)",
    or "max (n=11)" when too few samples for the quantile). Numbers keep 4 significant digits
    (the line is read by people too).
    """
    runs = load_run(run_dir)
    rl = round_level(runs)
    m = run_metrics(runs).iloc[0]
    lat = rl["latency_ms"].to_numpy()
    inb = rl.loc[rl["in_burst"], "latency_ms"].to_numpy()
    outb = rl.loc[~rl["in_burst"], "latency_ms"].to_numpy()

    def num(x: float) -> float | None:
        """4 significant digits: 0.9721 and 647.9, not 0.9721448421478271."""
        return None if x is None or math.isnan(x) else float(f"{x:.4g}")

    out: dict = {}
    for name, values, p in (
        ("p50_ms", lat, 0.50),
        ("p99_ms", lat, 0.99),
        ("p99_in_burst_ms", inb, 0.99),
        ("p50_no_burst_ms", outb, 0.50),
    ):
        qv = quantile(values, p)
        out[name], out[f"{name}_rule"] = num(qv.number), qv.rule
    return {
        **out,
        "delivered_loss_mean": num(m["loss_mean"]),
        "bursts": int(m["bursts"]),
        "comm_fraction": num(m["comm_fraction"]),
        "final_acc": num(m["final_acc"]),
    }
