"""How late the burst scheduler plays a preset's schedule on the fat-tree (ms; needs root).

    flock /tmp/dblp-net.lock .venv/bin/python -m benchmarks.schedule_playback_lag [--seconds 20]

The preset (default heavy: loss bursts and incast) seeded as a run would lay it, played under
a UDP iperf3 probe h1 -> h16 at 50 Mbit/s; lag = applied - planned per `bursts` row, by kind
and overall. This is the figure tests/integration/test_scheduler_fattree.py used to bound; a
test now checks only that events are applied and reverted in order.
"""

from __future__ import annotations

import argparse

from benchmarks.playback import LAG_HEADER, lag_row, play, warm_fattree
from testbed.bursts import presets, schedule


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="heavy")
    ap.add_argument("--seconds", type=float, default=20.0, help="probe (and playback) seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", default="iptables", choices=("netem", "iptables", "nft"))
    args = ap.parse_args()

    with warm_fattree() as net:
        workers = schedule.place_workers(net.topo, schedule.DEFAULT_WORKERS)
        preset = presets.load(args.preset)
        events = schedule.generate(preset, net.topo, workers, args.seconds * 3, args.seed)
        _, bursts = play(net, events, args.backend, args.seconds, "h1", "h16", mbps=50.0)
    print(f"## {args.preset}, seed {args.seed}, {args.backend}, {args.seconds:g} s of playback\n")
    print(LAG_HEADER)
    for kind in sorted({b["kind"] for b in bursts}):
        print(lag_row(kind, [b for b in bursts if b["kind"] == kind]))
    print(lag_row("all", bursts))


if __name__ == "__main__":
    main()
