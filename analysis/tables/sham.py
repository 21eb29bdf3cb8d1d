"""The sham control: calm-round p50 under `sham` against `none`."""

from __future__ import annotations

import pandas as pd

from analysis.fidelity import sham_shift
from analysis.load import Runs
from analysis.tables.constants import NON_BURST_PRESETS


def sham_table(rl: pd.DataFrame, runs: Runs) -> pd.DataFrame:
    """The sham control per (workload, label): calm-round p50 (median of the rounds outside
    burst windows, per run, then over runs) under `sham` against `none`, over the seeds that
    ran both (`seeds`); shift and the verdict from `fidelity.sham_shift`. Empty without a
    sham run beside a none run of the same label, workload and seed."""
    keys = ("workload", "label")
    info = runs.runs[["run_id", *keys, "preset", "seed"]]
    calm = rl[~rl["in_burst"]].groupby("run_id")["latency_ms"].median().rename("p50_ms")
    c = info[info["preset"].isin(NON_BURST_PRESETS)].merge(calm.reset_index(), on="run_id")
    both = c.groupby([*keys, "seed"])["preset"].transform("nunique") == 2
    c = c[both]
    out = sham_shift(c, keys)
    seeds = c.groupby(list(keys))["seed"].nunique().rename("seeds").reset_index()
    out = out.merge(seeds, on=list(keys), how="left")
    return out[[*keys, "seeds", "none_p50_ms", "sham_p50_ms", "shift", "faithful"]]
