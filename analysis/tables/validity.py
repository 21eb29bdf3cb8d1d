"""One row per run: status, whether aggregated, fidelity, rejected datagrams, warnings."""

from __future__ import annotations

import pandas as pd

from analysis.load import Runs
from analysis.tables.common import rejections_text
from analysis.tables.constants import GROUP


def validity_table(runs: Runs, metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per run: status, whether it was aggregated, reason, the fidelity verdict, the
    time dilation it ran at, oversubscribed, rejected datagrams (total and by reason), CPU-wait
    share, warnings."""
    cols = ["run_id", *GROUP, "repeat", "seed", "status", "reason", "unfaithful", "not_judged"]
    v = runs.runs[[*cols, "dilation", "oversubscribed", "rejected", "warnings"]].copy()
    aggregated = v["run_id"].isin(runs.aggregated().runs["run_id"])
    v.insert(v.columns.get_loc("status") + 1, "aggregated", aggregated)
    v.insert(
        v.columns.get_loc("rejected") + 1,
        "rejections",
        runs.runs["rejections"].map(rejections_text),
    )
    v = v.merge(metrics[["run_id", "cpu_wait_share", "rounds", "steps"]], on="run_id", how="left")
    return v.sort_values(GROUP + ["repeat"], ignore_index=True)
