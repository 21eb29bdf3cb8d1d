"""How late each impairment mechanism applies and reverts a change (ms; needs root).

    flock /tmp/dblp-net.lock .venv/bin/python -m benchmarks.impairment_apply_lag [--events 60]

On the default fat-tree (k=4, 100 Mbit/s, pfifo 50) with a UDP iperf3 probe h16 -> h1 running:
lag = applied - planned over every (event, link direction) row, for bursts on heavy's loss
targets (pod 0's four aggregation->core uplinks and h1's edge downlink: 5 egresses in 3
namespaces changed at the same instant), then incast into h9's edge downlink.
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.playback import LAG_HEADER, lag_row, play, warm_fattree
from testbed.bursts import schedule
from testbed.bursts.schedule import Event
from topologies.model import Direction

#: heavy's loss targets on fattree(4) with workers h1, h5, h9, h13
HEAVY_LOSS = ("r_a0_0->r_c0_0", "r_a0_0->r_c0_1", "r_a0_1->r_c1_0", "r_a0_1->r_c1_1", "r_e0_0->h1")
CASES = [
    ("iptables-legacy -R (random 50%)", "iptables", "loss", 0.5, {"mode": "random"}),
    ("iptables-legacy -R (nth 1/2)", "iptables", "loss", 0.5, {"mode": "nth"}),
    ("nft replace rule (random 50%)", "nft", "loss", 0.5, {"mode": "random"}),
    ("tc class change (squeeze 10%)", "iptables", "squeeze", 0.1, {}),
]


def bursts_on(topo, directions, kind, magnitude, params, n, width_s, every_s, start_s=0.3):
    """n bursts of width_s every every_s, each on every one of the directions."""
    return [
        Event(i, topo.link(d.src, d.dst).name, d, kind, magnitude, dict(params),
              start_s + i * every_s, start_s + i * every_s + width_s)
        for i in range(n)
        for d in directions
    ]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=60, help="bursts per mechanism")
    args = ap.parse_args()

    n, width, every = args.events, 0.05, 0.15
    seconds = 0.3 + n * every + 0.3
    heavy = [Direction.parse(d) for d in HEAVY_LOSS]
    with warm_fattree() as net:
        topo = net.topo
        print("## apply / revert lag (ms; applied - planned, per event and link direction)\n")
        print(LAG_HEADER)
        for name, backend, kind, mag, params in CASES:
            events = bursts_on(topo, heavy, kind, mag, params, n, width, every)
            _, bursts = play(net, events, backend, seconds)
            print(lag_row(name, bursts))
        workers = schedule.place_workers(topo, schedule.DEFAULT_WORKERS)
        pairs = schedule.incast_senders(topo, "h9", workers, 4, sham=False)
        params = {"pairs": pairs, "mbps_per_sender": 75.0, "sham": False}
        into = Direction(topo.access_router("h9"), "h9")
        events = bursts_on(topo, [into], "incast", 3.0, params, n, width, every)
        _, bursts = play(net, events, "iptables", seconds)
        print(lag_row("incast (4 senders, pipe)", bursts))
        drops = [b["drops"] for b in bursts]
        print(f"\nincast: pfifo drops per 50 ms event median {statistics.median(drops):.0f}")


if __name__ == "__main__":
    main()
