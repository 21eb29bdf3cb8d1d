"""Round latency per group, in and outside bursts (quantiles pooled over repeats)."""

from __future__ import annotations

import math

import pandas as pd

from analysis.load import Runs
from analysis.stats import quantile
from analysis.tables.common import left_of, round_level, validity_flags
from analysis.tables.constants import GROUP


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
        row["validity"] = validity_flags(
            used, left_of(left_out, **dict(zip(GROUP, key, strict=True)))
        )
        rows.append(row)
    return pd.DataFrame(rows)
