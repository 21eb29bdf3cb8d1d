"""The report's table views: the columns each table shows, with units in their headers."""

from __future__ import annotations

import pandas as pd

from analysis.fidelity import SHAM_SHIFT_MAX
from analysis.report.columns import Col
from analysis.report.formatting import (
    fmt_acc,
    fmt_count,
    fmt_factor,
    fmt_multiple,
    fmt_num,
    fmt_pct,
    fmt_pp,
    fmt_quantile,
    fmt_ratio,
    fmt_signed_pct,
    fmt_text,
    fmt_yes_no,
    is_nan,
)
from analysis.tables.constants import ADAPTIVE_MODE, FAST_EPSILON


def _event_ratios(x: object, row: pd.Series) -> str:
    """max / p90 / median of the per-event hit-round ratios in one cell."""
    if is_nan(x):
        return "–"
    return " / ".join(fmt_ratio(row[f"event_ratio_{k}"]) for k in ("max", "p90", "median"))


def _events_seeds(x: object, row: pd.Series) -> str:
    """ "36 (3 seeds)": how many paired events a max is the max of, and from how many seeds."""
    if is_nan(x):
        return "–"
    seeds = int(row["seeds"])
    return f"{fmt_count(x)} ({seeds} seed{'s' if seeds != 1 else ''})"


def _nulls(x: object, row: pd.Series) -> str:
    """The p95 of each quantile's null, max / p90 / median, in one cell."""
    if is_nan(x):
        return "–"
    return " / ".join(fmt_ratio(row[f"null_{k}_p95"]) for k in ("max", "p90", "median"))


NULL = Col("null_max_p95", "null p95, max / p90 / median (×)", row_fmt=_nulls)
TRANSPORT = Col("label", "transport")
PRESET = Col("preset", "burst preset")
RUNS = Col("runs", "runs", fmt_count)
VALIDITY = Col("validity", "validity")


def _per_group(*cols: Col) -> tuple[Col, ...]:
    """A group table's view: transport, preset, runs, the columns, validity."""
    return (TRANSPORT, PRESET, RUNS, *cols, VALIDITY)


def _q(name: str, head: str) -> Col:
    return Col(f"{name}_ms", head, row_fmt=fmt_quantile(f"{name}_rule"))


LATENCY_VIEW = _per_group(
    Col("rounds_in", "rounds in burst", fmt_count),
    _q("p50_in", "p50 in burst (ms)"),
    _q("p99_in", "p99 in burst (ms)"),
    Col("rounds_out", "rounds outside", fmt_count),
    _q("p50_out", "p50 outside (ms)"),
    _q("p99_out", "p99 outside (ms)"),
    Col("max_all_ms", "max (ms)", fmt_num),
)

COMPARISON_VIEW = (
    PRESET,
    TRANSPORT,
    Col("burst_mean_ratio", "in-burst mean ratio (×)", fmt_ratio),
    Col("e2e_reduction", "end-to-end time cut, mean (%)", fmt_pct),
    Col("e2e_reduction_geo", "geometric mean (%)", fmt_pct),
    Col("tta_reduction", "time-to-accuracy cut, mean (%)", fmt_pct),
    Col("acc_delta", "Δ final accuracy (pp)", fmt_pp),
    Col("n", "repeats", fmt_count),
    VALIDITY,
)

EVENT_VIEW = (
    PRESET,
    TRANSPORT,
    Col("baseline", "vs"),
    Col("events", "events (seeds)", row_fmt=_events_seeds),
    Col("event_ratio_median", "hit-round ratio, median (×)", fmt_ratio),
    Col("event_ratio_p90", "p90 (×)", fmt_ratio),
    Col("event_ratio_max", "max (×)", fmt_ratio),
    NULL,
    Col("calm_ratio", "calm-round ratio (×)", fmt_ratio),
)

TRAINING_VIEW = _per_group(
    Col("train_s", "compute + communication (s)", fmt_num),
    Col("eval_s", "evaluation (s)", fmt_num),
    Col("tta_s", "time to target (s)", fmt_num),
    Col("tta_reached", "reached target (runs)", fmt_count),
    Col("final_acc", "final accuracy", fmt_acc),
    Col("comm_fraction", "communication share (%)", fmt_pct),
)

LOSS_VIEW = _per_group(
    Col("loss_in", "delivered loss in burst (%)", fmt_pct),
    Col("loss_out", "delivered loss outside (%)", fmt_pct),
    Col("nacks_per_run", "NACKs per run", fmt_count),
    Col("retx_per_run", "retransmitted pkts per run", fmt_count),
    Col("cap_hit_frac", "rounds at the cap (%)", fmt_pct),
    Col("replica_drift_max", "replica drift max", fmt_num),
    Col("bursts_per_100_steps", "bursts per 100 steps", fmt_num),
)

PROBE_VIEW = (
    Col("run_id", "run"),
    Col("probe", "probe"),
    PRESET,
    Col("bins", "bins", fmt_count),
    Col("bins_in_burst", "bins in burst", fmt_count),
    Col("mbps_in", "Mbit/s in burst", fmt_num),
    Col("mbps_out", "Mbit/s outside", fmt_num),
    Col("loss_in", "loss in burst (%)", fmt_pct),
    Col("loss_out", "loss outside (%)", fmt_pct),
    Col("rtt_ms_in", "RTT in burst (ms)", fmt_num),
    Col("rtt_ms_out", "RTT outside (ms)", fmt_num),
)


def _timeout_cell(x: object, row: pd.Series) -> str:
    """A fixed timeout as its multiple; the adaptive mode by name, with its effective one."""
    if row.get("mode") == ADAPTIVE_MODE:
        return f"adaptive (≈{fmt_multiple(x)} effective)"
    return fmt_multiple(x)


TIMEOUT_VIEW = (
    PRESET,
    Col("label", "system"),
    Col("baseline", "vs"),
    Col("timeout_x", "baseline timeout (× calm p50)", row_fmt=_timeout_cell),
    Col("cap_x", "hard cap (× calm p50)", fmt_multiple),
    Col("hit_x", "its median hit round (× calm p50)", fmt_multiple),
    Col("event_ratio_max", "hit-round ratio max / p90 / median (×)", row_fmt=_event_ratios),
    NULL,
    Col("calm_ratio", "calm-round ratio (×)", fmt_ratio),
    Col("events", "events (seeds)", row_fmt=_events_seeds),
)


ABLATION_VIEW = (
    PRESET,
    TRANSPORT,
    Col("eps_policy", "ε policy", fmt_text),
    RUNS,
    Col("train_s", "compute + communication (s)", fmt_num),
    Col("time_vs_fast", f"time / ε pinned at {FAST_EPSILON:g} (×)", fmt_ratio),
    Col("tta_s", "time to target (s)", fmt_num),
    Col("final_acc", "final accuracy", fmt_acc),
    Col("acc_delta", "Δ accuracy vs exact (pp)", fmt_pp),
    Col("loss_mean", "delivered loss, mean (%)", fmt_pct),
    Col("critical_share", "rounds in critical phase (%)", fmt_pct),
    Col("eps_mean", "mean ε", fmt_acc),
    VALIDITY,
)

PAPER_VIEW = (
    PRESET,
    Col("label", "system"),
    Col("baseline", "vs"),
    Col("e2e_reduction", "e2e time cut, mean (%)", fmt_pct),
    Col("e2e_reduction_geo", "geometric mean (%)", fmt_pct),
    Col("e2e_reduction_max", "e2e time cut, max over seeds (%)", fmt_pct),
    Col("n", "repeats", fmt_count),
    Col("acc_delta", "Δ final accuracy (pp)", fmt_pp),
    Col("event_ratio_max", "hit-round ratio max / p90 / median (×)", row_fmt=_event_ratios),
    NULL,
    Col("calm_ratio", "calm-round ratio (×)", fmt_ratio),
    Col("events", "events (seeds)", row_fmt=_events_seeds),
    VALIDITY,
)

VALIDITY_VIEW = (
    Col("run_id", "run"),
    Col("workload", "workload"),
    TRANSPORT,
    PRESET,
    Col("repeat", "repeat", fmt_count),
    Col("status", "status"),
    Col("unfaithful", "unfaithful", fmt_text),
    Col("not_judged", "fidelity not judged", fmt_text),
    Col("dilation", "dilation D", fmt_factor),
    Col("oversubscribed", "oversubscribed", fmt_text),
    Col("cpu_wait_share", "CPU wait / round, median (%)", fmt_pct),
    Col("rejected", "rejected datagrams", fmt_count),
    Col("rejections", "rejected by reason"),
    Col("warnings", "warnings"),
)

SHAM_VIEW = (
    Col("workload", "workload"),
    TRANSPORT,
    Col("seeds", "seeds", fmt_count),
    Col("none_p50_ms", "calm p50, none (ms)", fmt_num),
    Col("sham_p50_ms", "calm p50, sham (ms)", fmt_num),
    Col("shift", "sham − none (%)", fmt_signed_pct),
    Col("faithful", f"within ±{SHAM_SHIFT_MAX:.0%}", fmt_yes_no),
)

LEFT_OUT_VIEW = (
    Col("run_id", "run"),
    Col("workload", "workload"),
    TRANSPORT,
    PRESET,
    Col("repeat", "repeat", fmt_count),
    Col("status", "status"),
    Col("reason", "reason"),
    Col("rounds", "rounds", fmt_count),
    Col("steps", "steps", fmt_count),
    Col("train_s", "time so far (s)", fmt_num),
    Col("final_acc", "last accuracy", fmt_acc),
)
