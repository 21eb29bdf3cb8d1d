"""Probe runs (iperf3 / ping) are reported by their bins inside and outside burst windows."""

import math

from analysis import schema
from analysis.load import load_runs
from analysis.report import run_warnings
from analysis.tables import probe_table


def _probe_run(root, run_id="p1"):
    d = root / run_id
    d.mkdir()
    schema.write_run_info(d, schema.RunInfo(run_id=run_id, status="ok", workload="iperf3",
                                            preset="heavy", preset_role="burst",
                                            t0_s=10.0))  # fmt: skip
    bins = [
        # t_start, mbps, loss: bins 1 and 2 overlap the burst [10.15, 10.35]
        (10.0, 50.0, 0.0), (10.1, 30.0, 0.4), (10.2, 20.0, 0.6), (10.35, 48.0, 0.0),
    ]  # fmt: skip
    schema.write_table(d, "probes", [
        dict(run_id=run_id, probe="iperf3", t_start_s=t, t_end_s=t + 0.1, mbps=m, sent=100,
             lost=int(loss * 100), loss=loss, rtt_ms=math.nan)
        for t, m, loss in bins
    ])  # fmt: skip
    schema.write_table(d, "bursts", [
        dict(run_id=run_id, event_id=0, link="a-b", direction="a->b", kind="loss", magnitude=0.5,
             planned_start_s=10.15, planned_end_s=10.35, applied_start_s=10.15,
             applied_end_s=10.35, drops=60)
    ])  # fmt: skip
    return d


def test_probe_bins_split_by_burst_membership(tmp_path):
    runs = load_runs([_probe_run(tmp_path)])
    t = probe_table(runs)
    row = t.iloc[0]
    assert (row["bins"], row["bins_in_burst"]) == (4, 2)
    assert row["mbps_in"] == 25.0 and row["mbps_out"] == 49.0
    assert row["loss_in"] == 0.5 and row["loss_out"] == 0.0
    assert math.isnan(row["rtt_ms_in"])  # iperf3 measures no RTT


def test_a_probe_run_is_not_flagged_for_having_no_rounds(tmp_path):
    runs = load_runs([_probe_run(tmp_path)])
    assert not [w for w in run_warnings(runs) if "no rounds" in w]
