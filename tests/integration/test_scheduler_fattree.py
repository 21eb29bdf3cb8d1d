"""The heavy preset on the default fat-tree: rows match the schema, bursts show in an iperf3
probe, and nothing of ours (rule, rate change, shell, sender) outlives `stop()`."""

from __future__ import annotations

import statistics

import pytest

from analysis import schema
from testbed import presets, probes, schedule
from testbed.scheduler import BurstScheduler
from topologies import fattree

pytestmark = pytest.mark.require_root

SECONDS = 6.0


@pytest.fixture(scope="module")
def tree():
    from testbed.network import live_network

    with live_network(fattree(4), seed=0) as net:
        for h in ("h1", "h9", "h16"):
            net.exec(h, ["ping", "-c1", "-W2", net.topo.host_ip("h13")], timeout=5)
        yield net


@pytest.fixture(scope="module")
def heavy_run(tree):
    workers = schedule.place_workers(tree.topo, 4)
    events = schedule.generate(presets.load("heavy"), tree.topo, workers, SECONDS * 3, seed=1)
    sched = BurstScheduler(tree, events, "iptables", "heavy-test")
    sched.prepare()
    senders = list(sched._mechs["incast"].senders.values())
    shells = list(sched._shells.values())
    try:
        rows = probes.run_probe(tree, sched, "iperf3", "h1", "h16", SECONDS, run_id="heavy-test")
    finally:
        bursts = sched.stop()
    return rows, bursts, sched, senders, shells


def test_bursts_rows_match_the_schema_and_cover_only_due_events(heavy_run):
    _, bursts, sched, _, _ = heavy_run
    df = schema.validate("bursts", schema.coerce("bursts", bursts))
    assert set(df["kind"]) == {"loss", "incast"}
    assert (df["planned_start_s"] < sched.t0 + SECONDS + 5).all()
    applied = df.dropna(subset=["applied_start_s", "applied_end_s"])
    assert len(applied) >= 0.9 * len(df)
    assert (applied["applied_end_s"] > applied["applied_start_s"]).all()
    lag = applied["applied_start_s"] - applied["planned_start_s"]
    assert lag.median() < 0.02  # wide bound; the benchmark reports the real lag
    assert df.loc[df["kind"] == "loss", "drops"].sum() > 0


def test_probe_throughput_drops_inside_loss_windows(heavy_run):
    rows, bursts, _, _, _ = heavy_run
    schema.validate("probes", schema.coerce("probes", rows))
    windows = [
        (b["applied_start_s"], b["applied_end_s"])
        for b in bursts
        if b["kind"] == "loss" and b["direction"] == "r_a0_0->r_c0_0"
    ]

    def overlap(r):
        return sum(max(0.0, min(r["t_end_s"], e) - max(r["t_start_s"], s)) for s, e in windows) / (
            r["t_end_s"] - r["t_start_s"]
        )

    hit = [r["mbps"] for r in rows if overlap(r) > 0.6]
    calm = [r["mbps"] for r in rows if overlap(r) == 0]
    assert hit and calm
    assert statistics.median(hit) < 0.8 * statistics.median(calm)
    assert statistics.median(calm) == pytest.approx(50.0, abs=5.0)


def test_nothing_is_left_after_stop(tree, heavy_run):
    _, _, sched, senders, shells = heavy_run
    assert all(p.proc.poll() is not None for p in senders)
    assert all(sh.proc.poll() is not None for sh in shells)
    for name in ("r_a0_0", "r_a0_1", "r_e0_0", "r_e2_0"):
        assert "dblp" not in tree.exec(name, ["iptables-legacy", "-S"])
    for link in tree.topo.links:
        for node, peer in ((link.a, link.b), (link.b, link.a)):
            intf = tree.topo.intf(node, peer)
            assert "rate 100Mbit" in tree.exec(node, ["tc", "class", "show", "dev", intf])
            assert "pfifo 10:" in tree.exec(node, ["tc", "qdisc", "show", "dev", intf])
