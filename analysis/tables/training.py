"""Per-group training time (compute plus communication), evaluation time, time to accuracy,
final accuracy and communication share."""

from __future__ import annotations

import math

import pandas as pd

from analysis.tables.common import group_table
from analysis.tables.constants import GROUP


def training_table(metrics: pd.DataFrame, left_out: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group: training time (compute plus communication), evaluation time, time-to-accuracy
    at the group's target (`target_acc`, set by `target_of`: see `targets`), final accuracy,
    comm share. tta_reached: how many of the group's `runs` reached the target (NaN without
    evaluations)."""
    t = group_table(
        metrics,
        {"train_s": "train_s", "eval_s": "eval_s", "tta_s": "tta_s", "final_acc": "final_acc"},
        left_out,
    )
    if t.empty:
        return t

    def reached_of(g: pd.DataFrame) -> float:
        if g["target_acc"].isna().all() or g["final_acc"].isna().all():
            return math.nan  # no evaluations (e.g. the allreduce workload) or no target
        return float(g["tta_s"].notna().sum())

    cols = ["tta_s", "final_acc", "target_acc"]
    reached = metrics.groupby(GROUP)[cols].apply(reached_of)
    g = metrics.groupby(GROUP)
    t = t.merge(reached.rename("tta_reached").reset_index(), on=GROUP)
    t = t.merge(g["comm_fraction"].mean().reset_index(), on=GROUP)
    t = t.merge(g[["target_acc", "target_of"]].first().reset_index(), on=GROUP)
    head = [*GROUP, "runs", "target_acc", "target_of"]
    return t[[*head, *(c for c in t.columns if c not in head)]]
