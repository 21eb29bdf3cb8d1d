"""The report's section for the paper's own tables (analysis/tables/paper_tables.py): the
burst-iteration latency (Tables II–VI), training time normalised to the paper's system with the
share of rounds hit (Table VIII and the dose-response), accuracy as non-inferiority (Table IX).
Shown only when the runs hold the rows they need."""

from __future__ import annotations

import pandas as pd

from analysis.report.columns import Col
from analysis.report.formatting import (
    fmt_acc,
    fmt_count,
    fmt_num,
    fmt_pct,
    fmt_pp,
    fmt_quantile,
    fmt_ratio,
    fmt_yes_no,
)
from analysis.report.sections import by_workload
from analysis.report.views import PRESET, RUNS, TRANSPORT, VALIDITY
from analysis.tables.paper_tables import ACCURACY_MARGIN, ONE_SIDED_LEVEL

SECTION = "The paper's tables"

BURST_LATENCY_VIEW = (
    TRANSPORT,
    PRESET,
    RUNS,
    Col("events", "events", fmt_count),
    Col("hit_median_ms", "burst round, median (ms)", fmt_num),
    Col("hit_max_ms", "burst round, max (ms)", fmt_num),
    Col("tail_p99_ms", "tail: p99 of all rounds (ms)", row_fmt=fmt_quantile("tail_p99_rule")),
    Col("tail_max_ms", "tail: max (ms)", fmt_num),
    Col("mean_ms", "average round (ms)", fmt_num),
    Col("calm_median_ms", "calm round, median (ms)", fmt_num),
    Col("loss_max", "worst delivered loss", fmt_acc),
    Col("epsilon_max", "ε", fmt_acc),
    Col("cap_rounds", "rounds at the cap", fmt_count),
)
NORMALISED_VIEW = (
    TRANSPORT,
    PRESET,
    RUNS,
    Col("hit_share", "rounds hit", fmt_pct),
    Col("train_s", "training time, mean (s)", fmt_num),
    Col("time_vs_system", "time / the system's (×)", fmt_ratio),
    Col("system_cut", "the system's cut", fmt_pct),
    VALIDITY,
)
NONINFERIORITY_VIEW = (
    TRANSPORT,
    PRESET,
    RUNS,
    Col("final_acc", "final accuracy, mean", fmt_acc),
    Col("acc_delta", "Δ vs the exact control", fmt_pp),
    Col("acc_delta_lower", f"one-sided {ONE_SIDED_LEVEL:.0%} lower bound", fmt_pp),
    Col("noninferior", f"non-inferior (margin {100 * ACCURACY_MARGIN:+.0f} pp)", fmt_yes_no),
)


def paper_tables_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    """The section's lines; none when no table has rows."""
    lat, norm, acc = (tables[k] for k in ("burst_latency", "normalised_time", "noninferiority"))
    if lat.empty and norm.empty and acc.empty:
        return []
    lines = [f"## {SECTION}", ""]
    if not lat.empty:
        lines += [
            "### Tables II–VI: the burst round, the tail and the average",
            "",
            "A burst round is the round a burst event hit (max over ranks); the tail is the "
            "p99 and the max over every round of the group's runs, hit or calm; the average is "
            "their mean. The per-event ratios and their nulls are under Burst events.",
            "",
        ]
        lines += by_workload(lat, BURST_LATENCY_VIEW, ["preset", "label"])
        lines += ["CSV: [tables/burst_latency.csv](tables/burst_latency.csv)", ""]
    if not norm.empty:
        lines += [
            "### Table VIII and the dose-response: training time against the paper's system",
            "",
            "Per preset, each transport's training time (compute plus communication) over the "
            "paper's system's on the same seed, and the system's cut 1 − its time / the "
            "transport's: arithmetic means of the per-seed values with 95% t-intervals. "
            "`rounds hit` is the share of training rounds a burst event hit.",
            "",
        ]
        lines += by_workload(norm, NORMALISED_VIEW, ["hit_share", "preset", "label"])
        lines += ["CSV: [tables/normalised_time.csv](tables/normalised_time.csv)", ""]
    if not acc.empty:
        lines += [
            "### Table IX: final accuracy, non-inferiority against the exact control",
            "",
            "Final test accuracy minus the exact control's without bursts, paired by seed; "
            "non-inferior when the one-sided lower bound is above the margin.",
            "",
        ]
        lines += by_workload(acc, NONINFERIORITY_VIEW, ["preset", "label"])
        lines += ["CSV: [tables/noninferiority.csv](tables/noninferiority.csv)", ""]
    return lines
