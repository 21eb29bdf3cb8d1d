"""Loopback benchmark of the transports: `world` rank processes on 127.0.0.1, no root needed.

    python -m benchmarks.transport_loopback --transport dblp --world 4 --size 4 --rounds 50
        --drop 0.05 --rate 100 [--epsilon E] [--mode adaptive|fixed] [--json]

A round's latency is the max over ranks. bound_ratio = p50 / (2 (N-1)/N S / B), S the bucket's
float32 bytes and B the per-rank rate; goodput_mbps = (1 - mean delivered loss) S / p50;
cpu_s_per_mib = CPU seconds of all ranks inside the rounds per MiB of payload they sent
(repairs included; for tcp, the ring's 2 (N-1)/N S). --drop is a seeded loss at the receiving
socket that exercises the completion logic; it is not a network model. The UDP transports are
calibrated first (5 reliable, loss-free rounds; t_max = 4 x p50 unless --t-max-ms).
tcp is Gloo's all_reduce timed; nothing paces it on loopback, so its latency is not comparable
with the paced transports (its row is there for CPU cost and as a sanity reference).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from workloads.transport import fastpath
from workloads.transport.completion import transport_names, transport_traits
from workloads.transport.loopback import Case, LoopbackJob, RankResult

MIB = 1 << 20


def summarize(args: argparse.Namespace, results: list[RankResult]) -> dict:
    world = len(results)
    lat = np.max([[s["latency_ms"] for s in r.stats] for r in results], axis=0)
    loss = np.array([[s["delivered_loss"] for s in r.stats] for r in results])
    caps = np.array([[s["cap_hit"] for s in r.stats] for r in results]).any(axis=0)
    sent = sum(s["bytes"] for r in results for s in r.stats)
    cpu = sum(r.cpu_s for r in results)
    size_bytes = int(args.size * MIB) // 4 * 4
    p50 = float(np.percentile(lat, 50))
    bound_ms = 2 * (world - 1) / world * size_bytes * 8 / (args.rate * 1e6) * 1e3
    err = max(max(r.err_exact, default=0.0) for r in results) / world
    eps = results[0].stats[0].get("epsilon", 0.0) if results[0].stats else 0.0
    return {
        "transport": args.transport,
        "world": world,
        "size_mib": args.size,
        "rounds": args.rounds,
        "p50_ms": round(p50, 3),
        "p99_ms": round(float(np.percentile(lat, 99)), 3),
        "goodput_mbps": round((1 - float(loss.mean())) * size_bytes * 8 / (p50 * 1e3), 3),
        "delivered_loss_mean": round(float(loss.mean()), 6),
        "delivered_loss_max": round(float(loss.max()), 6),
        "epsilon": eps,
        "cap_hits": int(caps.sum()),
        "max_abs_err": float(err),
        "bound_ratio": round(p50 / bound_ms, 4),
        "cpu_s_per_mib": round(cpu / (sent / MIB), 5) if sent else 0.0,
        "mode": args.mode if args.transport == "optireduce" else "",
        "path": "python" if args.no_fastpath or not fastpath.available() else "compiled",
        "t_max_ms": results[0].t_max_ms,
        "calibrated_p50_ms": results[0].p50_ms,
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.transport_loopback",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--transport", choices=transport_names(), default="dblp")
    ap.add_argument("--world", type=int, default=4, help="ranks (processes)")
    ap.add_argument("--size", type=float, default=4.0, help="bucket size, MiB of float32")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--drop", type=float, default=0.0, help="injected receive-side loss, 0-1")
    ap.add_argument("--rate", type=float, default=100.0, help="per-rank pacing, Mbit/s")
    ap.add_argument("--epsilon", type=float, default=0.01, help="dblp / mlt loss budget")
    ap.add_argument(
        "--mode", choices=("adaptive", "fixed"), default="adaptive", help="optireduce timeout mode"
    )
    ap.add_argument("--t-max-ms", type=float, default=None, help="hard cap (default 4 x p50)")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-fastpath", action="store_true", help="the Python data path alone (no fastpath.c)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.world < 2:
        ap.error("--world must be >= 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    n = int(args.size * MIB) // 4
    config = {
        "rate_mbps": args.rate,
        "mtu": args.mtu,
        "optireduce_mode": args.mode,
        "t_max_ms": args.t_max_ms,
        "drop": args.drop,
        "seed": args.seed,
        "fastpath": not args.no_fastpath,
    }
    case = Case(
        transport=args.transport,
        n_elems=n,
        rounds=args.rounds,
        config=config,
        epsilon=args.epsilon if transport_traits(args.transport).uses_epsilon else 0.0,
        calibrate_rounds=0 if args.transport == "tcp" else 5,
        seed=args.seed,
    )
    with LoopbackJob(args.world, seed=args.seed) as job:
        results = job.run(case)
    row = summarize(args, results)
    if args.json:
        print(json.dumps(row))
    else:
        keys = list(row)
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
