"""The sham control: calm-round p50 under the control preset against the calm one."""

from __future__ import annotations

import pandas as pd

from analysis.fidelity import sham_shift
from analysis.load import Runs
from analysis.tables.roles import CALM, CONTROL


def sham_table(rl: pd.DataFrame, runs: Runs) -> pd.DataFrame:
    """The sham control per (workload, label): calm-round p50 (median of the rounds outside
    burst windows, per run, then over runs) under the preset whose role is "control" against
    the one whose role is "calm" (run.json's preset_role), over the seeds that ran both
    (`seeds`); shift and the verdict from `fidelity.sham_shift`. Empty without a control run
    beside a calm run of the same label, workload and seed."""
    keys = ("workload", "label")
    info = runs.runs[["run_id", *keys, "preset_role", "seed"]]
    calm = rl[~rl["in_burst"]].groupby("run_id")["latency_ms"].median().rename("p50_ms")
    c = info[info["preset_role"].isin((CALM, CONTROL))].merge(calm.reset_index(), on="run_id")
    both = c.groupby([*keys, "seed"])["preset_role"].transform("nunique") == 2
    c = c[both]
    out = sham_shift(c, keys)
    seeds = c.groupby(list(keys))["seed"].nunique().rename("seeds").reset_index()
    out = out.merge(seeds, on=list(keys), how="left")
    return out[[*keys, "seeds", "none_p50_ms", "sham_p50_ms", "shift", "faithful"]]
