"""Network-only probe runs (iperf3 / ping) in and outside bursts."""

from __future__ import annotations

import math

import pandas as pd

from analysis.load import Runs
from analysis.windows import in_burst


def probe_table(runs: Runs) -> pd.DataFrame:
    """Network-only probe runs (iperf3 / ping): throughput, loss and RTT in and outside bursts."""
    p = runs.probes
    cols = ["run_id", "probe", "preset", "bins", "bins_in_burst", "mbps_in", "mbps_out",
            "loss_in", "loss_out", "rtt_ms_in", "rtt_ms_out"]  # fmt: skip
    if p.empty:
        return pd.DataFrame(columns=cols)
    p = p.assign(in_burst=in_burst(p, runs.bursts).to_numpy())
    rows = []
    for (run_id, probe, preset), g in p.groupby(["run_id", "probe", "preset"]):
        inside, outside = g[g["in_burst"]], g[~g["in_burst"]]
        row = {"run_id": run_id, "probe": probe, "preset": preset, "bins": len(g),
               "bins_in_burst": len(inside)}  # fmt: skip
        for col, name in (("mbps", "mbps"), ("loss", "loss"), ("rtt_ms", "rtt_ms")):
            row[f"{name}_in"] = inside[col].mean() if len(inside) else math.nan
            row[f"{name}_out"] = outside[col].mean() if len(outside) else math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)
