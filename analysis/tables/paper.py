"""The paper's two statistics, per comparison: the system vs each baseline on bursty presets,
with the published figures beside the paper's comparison (dblp's paper against its own
fixed-tolerance baseline) only."""

from __future__ import annotations

import pandas as pd

from analysis.tables.constants import EVENT_STATS, PUBLISHED
from analysis.tables.roles import PAPER, SYSTEM, Cast, comparison_order


def paper_comparisons(comp: pd.DataFrame, cast: Cast) -> pd.DataFrame:
    """The comparison rows the paper's ratios use: a transport that plays "system" in the row's
    comparison (any of its variants) vs that comparison's baseline, under a preset that
    impairs the network. Other transports vs a baseline stay in the comparisons table."""
    return comp[
        cast.role(comp["transport"], comp["comparison"]).eq(SYSTEM) & cast.bursty(comp["preset"])
    ]


#: The paper table's columns: this testbed's figures, then the published ones beside them.
_PAPER_COLUMNS = [
    "comparison",
    "workload",
    "preset",
    "label",
    "baseline",
    "e2e_reduction",
    "e2e_reduction_lo",
    "e2e_reduction_hi",
    "e2e_reduction_geo",
    "e2e_reduction_max",
    "n",
    "acc_delta",
    "acc_delta_lo",
    "acc_delta_hi",
    *EVENT_STATS,
    *(f"published_{k}" for k in PUBLISHED),
    "validity",
]


def paper_table(comp: pd.DataFrame, events: pd.DataFrame, cast: Cast) -> pd.DataFrame:
    """The paper's two statistics per (comparison, workload, bursty preset, system label,
    baseline label), the published figures beside the paper comparison's rows (NaN beside the
    design's: the paper measured its system against its own baseline, not against these).

    End-to-end reduction (of compute plus communication): the comparisons' arithmetic mean
    over repeats with its 95% t-interval, the geometric mean beside it, and its max over the
    seeds (paired by seed; the paper's 24.4% mean and 33.9% max are over its own
    settings). Δ final accuracy (system - baseline, with its CI) says whether the time was
    bought with accuracy.
    Burst statistic: the events table's per-event hit-round ratio, max / p90 / median over
    the events of `seeds` seeds, and the calm-round ratio; the max carries no CI.
    """
    keys = ["comparison", "workload", "preset", "label", "baseline"]
    c = paper_comparisons(comp, cast)
    cols = [*keys, "e2e_reduction", "e2e_reduction_lo", "e2e_reduction_hi", "e2e_reduction_geo"]
    cols += ["e2e_reduction_max"]
    cols += ["n", "acc_delta", "acc_delta_lo", "acc_delta_hi", "validity"]
    t = c[cols].merge(events[[*keys, *EVENT_STATS]], on=keys, how="left")
    for name, value in PUBLISHED.items():
        t[f"published_{name}"] = t["comparison"].map({PAPER: value}).astype(float)
    t["_o"] = comparison_order(t["comparison"])
    t = t.sort_values(["_o", *keys[1:]], ignore_index=True)
    return t[_PAPER_COLUMNS]
