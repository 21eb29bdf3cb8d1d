"""What `--integrity mac` costs: CPU seconds per MiB of payload, MAC off and on, on loopback.

    python -m benchmarks.integrity_cost [--world 3] [--size 4] [--rounds 20] [--rate 400]

`world` rank processes on 127.0.0.1 (no root) run `reliable` rounds of a `size` MiB bucket in
three set-ups: MAC off on the compiled data path (the default), MAC off on the Python path
(the same path the MAC runs on, so the difference is the MAC alone), and MAC on. CPU is every
rank's process CPU inside the rounds, per MiB of payload the ranks sent. Run it alone: on a
shared machine the numbers move with the load.
"""

from __future__ import annotations

import argparse

import numpy as np

from workloads.transport.loopback import Case, LoopbackJob

MIB = 1 << 20
SETUPS = (  # (label, config)
    ("off, compiled path", {"integrity": "off", "fastpath": True}),
    ("off, Python path", {"integrity": "off", "fastpath": False}),
    ("mac (Python path)", {"integrity": "mac", "fastpath": True}),
)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=3)
    ap.add_argument("--size", type=float, default=4.0, help="bucket MiB")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rate", type=float, default=400.0, help="Mbit/s per rank")
    args = ap.parse_args(argv)
    n_elems = int(args.size * MIB) // 4
    print(f"{args.world} ranks, {args.size:g} MiB, {args.rounds} reliable rounds, "
          f"{args.rate:g} Mbit/s per rank")  # fmt: skip
    with LoopbackJob(args.world, seed=1) as job:
        base = None
        for label, cfg in SETUPS:
            case = Case("reliable", n_elems, args.rounds, {"rate_mbps": args.rate, **cfg})
            results = job.run(case)
            sent = sum(s["bytes"] for r in results for s in r.stats) / MIB
            cpu = sum(r.cpu_s for r in results)
            lat = np.max([[s["latency_ms"] for s in r.stats] for r in results], axis=0)
            per_mib = cpu / sent * 1e3
            extra = "" if base is None else f"  ({per_mib / base:.2f}x of off, same path)"
            if label.startswith("off, Python"):
                base = per_mib
            print(f"{label:20s} CPU {per_mib:7.2f} ms/MiB   p50 {np.median(lat):7.1f} ms{extra}")


if __name__ == "__main__":
    main()
