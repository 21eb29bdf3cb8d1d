"""Per-group training time, time to accuracy, final accuracy and communication share."""

from __future__ import annotations

import math

import pandas as pd

from analysis.tables.common import group_table
from analysis.tables.constants import GROUP


def training_table(
    metrics: pd.DataFrame, target_acc: float | None, left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per group: training time, time-to-accuracy at the target, final accuracy, comm share.
    tta_reached: how many of the group's `runs` reached the target (NaN without evaluations)."""
    t = group_table(
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
