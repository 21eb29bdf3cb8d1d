"""Measured vs configured loss, per loss mechanism and mode (needs root).

    flock /tmp/dblp-net.lock .venv/bin/python -m benchmarks.impairment_loss_accuracy [--seconds 3]

On the default fat-tree (k=4, 100 Mbit/s, pfifo 50): constant loss on h1's edge downlink, set
before a UDP iperf3 h16 -> h1 (20 Mbit/s, 1400 B) starts; iperf3's own lost/sent beside the
rule's drop counter.
"""

from __future__ import annotations

import argparse

from benchmarks.playback import warm_fattree
from testbed.bursts.schedule import Event
from testbed.bursts.scheduler import BurstScheduler
from testbed.run import probes
from topologies.model import Direction

PROBABILITIES = (0.01, 0.05, 0.2, 0.5)


def constant_loss(net, event: Event, backend: str, seconds: float) -> tuple[int, int, int]:
    """(iperf3 lost, iperf3 sent, rule drops) with the event in force for the whole stream."""
    sched = BurstScheduler(net, [event], backend, "bench")
    sched.prepare()
    try:
        lost, sent = probes.iperf3_udp_totals(net, sched, "h16", "h1", seconds)
    finally:
        bursts = sched.stop()
    return lost, sent, bursts[0]["drops"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="iperf3 seconds per setting")
    args = ap.parse_args()

    with warm_fattree() as net:
        into = Direction(net.topo.access_router("h1"), "h1")
        link = net.topo.link(into.src, into.dst).name
        print("## measured vs configured loss (iperf3 UDP 20 Mbit/s h16 -> h1, 1400 B)\n")
        print("| mechanism | mode | configured | iperf3 lost/sent | measured | rule drops/sent |")
        print("|---|---|---|---|---|---|")
        for backend in ("iptables", "nft"):
            for mode in ("random", "nth"):
                for p in PROBABILITIES:
                    ev = Event(0, link, into, "loss", p, {"mode": mode}, 0.0, 1e6)
                    lost, sent, drops = constant_loss(net, ev, backend, args.seconds)
                    print(
                        f"| {backend} | {mode} | {p:.2%} | {lost}/{sent} | {lost / sent:.2%} | "
                        f"{drops / sent:.2%} |"
                    )


if __name__ == "__main__":
    main()
