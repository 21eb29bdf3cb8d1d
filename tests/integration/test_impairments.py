"""Impairments on a real kernel: loss rates measured with iperf3, squeeze, incast, clean-up.

Run under the shared lock: `flock /tmp/dblp-net.lock .venv/bin/pytest tests/integration/...`.
"""

from __future__ import annotations

import json
import math
import os
import statistics

import pytest

from testbed.base import capabilities
from testbed.bursts import schedule
from testbed.bursts.presets import parse_preset
from testbed.bursts.schedule import Event
from testbed.bursts.scheduler import BurstScheduler
from testbed.run import probes
from topologies import dumbbell, star
from topologies.model import Direction

pytestmark = pytest.mark.require_root

CORE = ("r_left-r_right", Direction("r_left", "r_right"))  # dumbbell: h1, h2 left; h3, h4 right
NETEM = os.geteuid() == 0 and capabilities.probe().netem


@pytest.fixture(scope="module")
def bell():
    from testbed.network.live import live_network

    with live_network(dumbbell(2), seed=0) as net:
        net.exec("h1", ["ping", "-c1", "-W2", net.topo.host_ip("h3")], timeout=5)
        yield net


@pytest.fixture(scope="module")
def star5():
    from testbed.network.live import live_network

    with live_network(star(5), seed=0) as net:
        for h in ("h2", "h3", "h4", "h5"):
            net.exec(h, ["ping", "-c1", "-W2", net.topo.host_ip("h1")], timeout=5)
        yield net


def loss_event(p: float, mode: str, start=0.0, end=1e6) -> Event:
    return Event(0, CORE[0], CORE[1], "loss", p, {"mode": mode}, start, end)


def udp_probe(net, events, backend, seconds=3.0, mbps=20.0, run_dir=None):
    sched = BurstScheduler(net, events, backend, "test")
    sched.prepare()
    try:
        rows = probes.run_probe(net, sched, "iperf3", "h1", "h3", seconds, run_id="test",
                                mbps=mbps, run_dir=run_dir)  # fmt: skip
    finally:
        bursts = sched.stop()
    return rows, bursts, sched


def assert_clean(net, sched):
    """No rule, qdisc change, shell or sender of ours is left."""
    for node in ("r_left", "r_right", "h1", "h3"):
        assert "dblp" not in net.exec(node, ["iptables-legacy", "-S"])
        assert "dblp_loss" not in net.exec(node, ["nft", "list", "tables"])
    cls = net.exec("r_left", ["tc", "class", "show", "dev", net.topo.intf("r_left", "r_right")])
    assert "rate 100Mbit" in cls, cls
    leaf = net.exec("r_left", ["tc", "qdisc", "show", "dev", net.topo.intf("r_left", "r_right")])
    assert "pfifo 10:" in leaf and "netem" not in leaf, leaf
    assert all(sh.proc.poll() is not None for sh in sched._shells.values())


def udp_totals(net, events, backend, seconds=3.0, mbps=20.0):
    """(lost, sent) datagrams from iperf3's own end-of-test count, the burst rows, the scheduler."""
    sched = BurstScheduler(net, events, backend, "test")
    sched.prepare()
    try:
        lost, sent = probes.iperf3_udp_totals(net, sched, "h1", "h3", seconds, mbps)
    finally:
        bursts = sched.stop()
    return lost, sent, bursts, sched


@pytest.mark.parametrize("backend", ["iptables", "nft"])
def test_constant_random_loss_measures_the_configured_rate(bell, backend):
    lost, sent, bursts, sched = udp_totals(bell, [loss_event(0.2, "random")], backend)
    drops = bursts[0]["drops"]
    assert sent > 4000
    assert lost / sent == pytest.approx(0.2, abs=0.03)
    assert drops / sent == pytest.approx(0.2, abs=0.03)
    assert_clean(bell, sched)


@pytest.mark.parametrize("backend", ["iptables", "nft"])
def test_nth_loss_drops_exactly_every_fifth_packet(bell, backend):
    lost, sent, bursts, sched = udp_totals(bell, [loss_event(0.2, "nth")], backend)
    # every data datagram crosses the rule once, from the first: one in five is dropped
    drops = bursts[0]["drops"]
    assert drops in (sent // 5, sent // 5 + 1), (drops, sent)
    assert lost / sent == pytest.approx(0.2, abs=0.03)
    assert_clean(bell, sched)


def test_loss_windows_are_applied_in_order_and_show_in_the_bins(bell, tmp_path):
    events = [Event(i, *CORE, "loss", 0.5, {"mode": "random"}, 0.6 + i, 0.9 + i) for i in range(3)]
    rows, bursts, sched = udp_probe(bell, events, "iptables", seconds=3.5, run_dir=tmp_path)
    # iperf3's own -J report is kept beside the rows, the receiver's text inside it
    report = json.loads((tmp_path / "probes" / "iperf3-h1-h3.json").read_text())
    assert report["end"]["sum"]["packets"] > 0 and "error" not in report
    assert report["server_output_text"].count("Mbits/sec") >= len(rows)
    windows = [(b["applied_start_s"], b["applied_end_s"]) for b in bursts]
    assert len(windows) == 3 and all(not math.isnan(s) for w in windows for s in w)
    # never early, each on before it is off, each off before the next is on; how late is the
    # benchmark's to say (python -m benchmarks.impairment_apply_lag)
    assert all(b["applied_start_s"] >= b["planned_start_s"] for b in bursts)
    flat = [t for w in windows for t in w]
    assert flat == sorted(flat) and len(set(flat)) == len(flat)
    inside = [r["loss"] for r in rows if any(s <= r["t_start_s"] and r["t_end_s"] <= e
                                             for s, e in windows)]  # fmt: skip
    outside = [r["loss"] for r in rows if all(r["t_end_s"] < s or r["t_start_s"] > e
                                              for s, e in windows)]  # fmt: skip
    assert inside and outside
    assert statistics.mean(inside) == pytest.approx(0.5, abs=0.12)
    assert statistics.mean(outside) < 0.02  # a loaded machine loses a little on its own
    assert_clean(bell, sched)


def test_squeeze_to_a_tenth_shows_in_throughput(bell):
    ev = Event(0, CORE[0], CORE[1], "squeeze", 0.1, {}, 1.0, 2.0)
    rows, bursts, sched = udp_probe(bell, [ev], "iptables", seconds=3.0, mbps=50.0)
    s, e = bursts[0]["applied_start_s"], bursts[0]["applied_end_s"]
    inside = [r["mbps"] for r in rows if s + 0.15 <= r["t_start_s"] and r["t_end_s"] <= e]
    outside = [r["mbps"] for r in rows if r["t_end_s"] < s or r["t_start_s"] > e + 0.3]
    assert statistics.median(inside) == pytest.approx(10.0, abs=2.5)
    assert statistics.median(outside) == pytest.approx(50.0, abs=5.0)
    assert bursts[0]["drops"] > 100  # the pfifo leaf overflowed while squeezed
    assert_clean(bell, sched)


INCAST = """name = "incast-test"
[[streams]]
kind = "incast"
magnitude = 2.5
senders = 3
duration_s = 1.0
arrival = { min_gap_s = 0.7, mean_extra_gap_s = 0 }
targets = [{ role = "worker_downlink", worker = 0 }]
"""


def test_incast_fills_the_shallow_queue(star5):
    net = star5
    events = [e for e in schedule.generate(parse_preset(INCAST), net.topo, ["h1"], 1.0, 0)]
    assert len(events) == 1 and [s for s, _ in events[0].params["pairs"]] == ["h2", "h3", "h4"]
    intf = net.topo.intf("r_0", "h1")
    sched = BurstScheduler(net, events, "iptables", "test")
    sched.prepare()
    senders = list(sched._mechs["incast"].senders.values())
    try:
        rows = probes.run_probe(net, sched, "ping", "h5", "h1", 2.5, run_id="test")
    finally:
        bursts = sched.stop()
    s, e = bursts[0]["applied_start_s"], bursts[0]["applied_end_s"]
    inside = [r for r in rows if s + 0.1 <= r["t_start_s"] and r["t_end_s"] <= e]
    outside = [r["rtt_ms"] for r in rows if r["t_end_s"] < s or r["t_start_s"] > e + 0.2]
    # a bin whose pings were all dropped at the full queue has no RTT (NaN): it shows the
    # incast as loss, so the RTT rise is judged on the bins that got replies
    answered = [r["rtt_ms"] for r in inside if not math.isnan(r["rtt_ms"])]
    assert answered, inside
    # 50 x 1500 B at 100 Mbit/s is 6 ms of queue; calm RTT is a fraction of a ms
    assert statistics.median(answered) > 3.0, answered
    assert statistics.median(outside) < 1.0, outside
    assert bursts[0]["drops"] > 500
    tc = net.exec("r_0", ["tc", "-s", "qdisc", "show", "dev", intf])
    assert "pfifo 10:" in tc
    assert all(p.proc.poll() is not None for p in senders)  # senders are gone after stop()


@pytest.mark.skipif(not NETEM, reason="kernel has no sch_netem (testbed doctor)")
def test_netem_loss_measures_the_configured_rate(bell):
    rows, bursts, sched = udp_probe(bell, [loss_event(0.2, "random")], "netem")
    sent = sum(r["sent"] for r in rows)
    assert sum(r["lost"] for r in rows) / sent == pytest.approx(0.2, abs=0.03)
    assert_clean(bell, sched)


@pytest.mark.skipif(not NETEM, reason="kernel has no sch_netem (testbed doctor)")
def test_netem_delay_shows_in_rtt(bell):
    ev = Event(0, CORE[0], CORE[1], "delay", 20.0, {}, 0.0, 1e6)
    sched = BurstScheduler(bell, [ev], "netem", "test")
    sched.prepare()
    try:
        rows = probes.run_probe(bell, sched, "ping", "h1", "h3", 1.5, run_id="test")
    finally:
        sched.stop()
    assert statistics.median(r["rtt_ms"] for r in rows) == pytest.approx(20.0, abs=3.0)
    assert_clean(bell, sched)


@pytest.mark.skipif(NETEM, reason="kernel has sch_netem")
def test_delay_without_netem_names_sch_netem(bell):
    ev = Event(0, CORE[0], CORE[1], "delay", 5.0, {}, 0.0, 1.0)
    sched = BurstScheduler(bell, [ev], "iptables", "test")
    with pytest.raises(ValueError, match="sch_netem"):
        sched.prepare()
    sched.stop()
