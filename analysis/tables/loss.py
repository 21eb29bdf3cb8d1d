"""Per-group delivered loss, repairs, cap hits, drift and burst rate."""

from __future__ import annotations

import pandas as pd

from analysis.tables.common import group_table


def loss_table(metrics: pd.DataFrame, left_out: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group: delivered loss in/out of bursts, NACKs, cap hits, drift, bursts per 100 steps."""
    return group_table(
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
