"""Benchmark: apply/revert lag per mechanism and measured-vs-configured loss (needs root).

    flock /tmp/dblp-net.lock .venv/bin/python -m benchmarks.impairment_apply_lag [--events 60]

On the default fat-tree (k=4, 100 Mbit/s, pfifo 50) with a UDP iperf3 probe h16 -> h1 running:
lag = applied - planned over every (event, link direction) row, for bursts on heavy's loss
targets (pod 0's four aggregation->core uplinks and h1's edge downlink: 5 egresses in 3
namespaces changed at the same instant); incast into h9's edge downlink; then constant loss
on h1's edge downlink measured by iperf3 and by the rule's counter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

from testbed import probes, schedule
from testbed.schedule import Event
from testbed.scheduler import BurstScheduler
from topologies import fattree
from topologies.model import Direction

WORKERS = ["h1", "h5", "h9", "h13"]


def _bursts(topo, directions, kind, magnitude, params, n, width_s, every_s, start_s=0.3):
    return [
        Event(i, topo.link(d.src, d.dst).name, d, kind, magnitude, dict(params),
              start_s + i * every_s, start_s + i * every_s + width_s)
        for i in range(n)
        for d in directions
    ]  # fmt: skip


def _run(net, events, backend, seconds, mbps=20.0):
    sched = BurstScheduler(net, events, backend, "bench")
    sched.prepare()
    try:
        rows = probes.run_probe(
            net, sched, "iperf3", "h16", "h1", seconds, run_id="bench", mbps=mbps
        )
    finally:
        bursts = sched.stop()
    return rows, bursts


def _constant_loss(net, event, backend, seconds, mbps=20.0):
    """(lost, sent, rule drops) with the rule set before iperf3 starts; iperf3's own totals."""
    sched = BurstScheduler(net, [event], backend, "bench")
    sched.prepare()
    server = net.node("h1").popen(["iperf3", "-s", "-1", "-p", "5201"], stdout=subprocess.DEVNULL)
    net.register_process(server, "iperf3 server")
    try:
        sched.start(time.monotonic())
        time.sleep(0.5)
        argv = ["iperf3", "-c", net.topo.host_ip("h1"), "--cport", "5202", "-u", "-b",
                f"{mbps:g}M", "-l", "1400", "-t", f"{seconds:g}", "-J"]  # fmt: skip
        end = json.loads(net.exec("h16", argv, timeout=seconds + 20))["end"]["sum"]
    finally:
        bursts = sched.stop()
        server.kill()
        server.wait(5)
    return end["lost_packets"], end["packets"], bursts[0]["drops"]


def _lag_row(name: str, bursts: list[dict]) -> str:
    on = [(b["applied_start_s"] - b["planned_start_s"]) * 1000 for b in bursts]
    off = [(b["applied_end_s"] - b["planned_end_s"]) * 1000 for b in bursts]
    return (
        f"| {name} | {len(on)} | {statistics.median(on):.2f} | {max(on):.2f} | "
        f"{statistics.median(off):.2f} | {max(off):.2f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=60, help="bursts per mechanism")
    ap.add_argument("--loss-seconds", type=float, default=3.0)
    args = ap.parse_args()

    from testbed.network import live_network

    topo = fattree(4)
    heavy = [
        Direction.parse(d)
        for d in ("r_a0_0->r_c0_0", "r_a0_0->r_c0_1", "r_a0_1->r_c1_0", "r_a0_1->r_c1_1",
                  "r_e0_0->h1")
    ]  # fmt: skip
    n, width, every = args.events, 0.05, 0.15
    seconds = 0.3 + n * every + 0.3
    with live_network(topo, seed=0) as net:
        for h in ("h1", "h16", "h9"):
            net.exec(h, ["ping", "-c1", "-W2", topo.host_ip("h13")], timeout=5)
        print("## apply / revert lag (ms; applied - planned, per event and link direction)\n")
        print("| mechanism | rows | apply median | apply max | revert median | revert max |")
        print("|---|---|---|---|---|---|")
        cases = [
            ("iptables-legacy -R (random 50%)", "iptables", "loss", 0.5, {"mode": "random"}),
            ("iptables-legacy -R (nth 1/2)", "iptables", "loss", 0.5, {"mode": "nth"}),
            ("nft replace rule (random 50%)", "nft", "loss", 0.5, {"mode": "random"}),
            ("tc class change (squeeze 10%)", "iptables", "squeeze", 0.1, {}),
        ]
        for name, backend, kind, mag, params in cases:
            events = _bursts(topo, heavy, kind, mag, params, n, width, every)
            _, bursts = _run(net, events, backend, seconds)
            print(_lag_row(name, bursts))
        pairs = schedule.incast_senders(topo, "h9", WORKERS, 4, sham=False)
        inc = [
            Event(i, topo.link("r_e2_0", "h9").name, Direction("r_e2_0", "h9"), "incast", 3.0,
                  {"pairs": pairs, "mbps_per_sender": 75.0, "sham": False},
                  0.3 + i * every, 0.3 + i * every + width)
            for i in range(n)
        ]  # fmt: skip
        _, bursts = _run(net, inc, "iptables", seconds)
        print(_lag_row("incast (4 senders, pipe)", bursts))
        drops = [b["drops"] for b in bursts]
        print(f"\nincast: pfifo drops per 50 ms event median {statistics.median(drops):.0f}\n")

        print("## measured vs configured loss (iperf3 UDP 20 Mbit/s h16 -> h1, 1400 B)\n")
        print("| mechanism | mode | configured | iperf3 lost/sent | measured | rule drops/sent |")
        print("|---|---|---|---|---|---|")
        for backend in ("iptables", "nft"):
            for mode in ("random", "nth"):
                for p in (0.01, 0.05, 0.2, 0.5):
                    ev = Event(0, topo.link("r_e0_0", "h1").name, Direction("r_e0_0", "h1"),
                               "loss", p,
                               {"mode": mode}, 0.0, 1e6)  # fmt: skip
                    lost, sent, drops = _constant_loss(net, ev, backend, args.loss_seconds)
                    print(
                        f"| {backend} | {mode} | {p:.2%} | {lost}/{sent} | {lost / sent:.2%} | "
                        f"{drops / sent:.2%} |"
                    )


if __name__ == "__main__":
    main()
