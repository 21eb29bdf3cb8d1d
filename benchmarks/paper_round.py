"""The paper's own comparison on loopback: dblp at P_high against mlt at P_low, per loss rate.

    python -m benchmarks.paper_round [--world 4] [--size 1] [--rounds 5] [--rate 100]
        [--losses 0,0.6,0.7,0.8,0.9] [--p-low 0.008] [--p-high 0.408] [--collective tar|ps]
        [--json]

`--collective ps` runs the paper's own topology: --world workers (the paper: 3) and one
parameter server, a process of its own; each round's rows then count the server too (its
latency, the bytes it sends back, the loss of its reduce stage).

Every datagram of every measured round is dropped at rate L at the receiving socket (the
transport's seeded `drop`, as a round-aligned loss event would; calibration rounds are clean),
NACK and STOP datagrams included; the TCP control links of `--control tcp` are not dropped.
Rows: dblp at P_high with `--stop early --control tcp`, mlt at P_low with `--control tcp`,
both with no effective cap (t_max = 1000 x the calibrated p50); optireduce fixed and adaptive
(their default cap, 4 x p50); reliable (UDP NACKs, exact) up to --reliable-max-loss, since its
repair budget cannot outlast heavier loss. tcp is Gloo over TCP, not this data path: loopback
has no loss to inject into it, so it has no row.

Per row: round latency (the max over ranks, median over rounds), passes per stage (1 + repair
requests to the most-asked peer; scatter/gather, median) beside n = ln P / ln L, time per
pass, payload sent and skipped per round (all ranks, KiB), the worst delivered loss, cap hits,
and mlt's latency over the row's. The prediction (docs/design.md, "The paper's own
comparison"): dblp's gain over mlt lies between (1 - P_low)/(1 - P_high) (a pass costs its
bytes) and ln P_low / ln P_high (a pass costs a fixed time).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from workloads.transport.loopback import Case, LoopbackJob, RankResult

MIB = 1 << 20
CAP_X = 1000.0  # no effective cap in the paper's comparison


def rows_for(args: argparse.Namespace, loss: float) -> list[tuple[str, str, dict, float]]:
    """(label, policy, config, ε) of each transport at this loss."""
    paper = {"control": "tcp", "t_max_p50": CAP_X}
    rows = [
        ("dblp", "dblp", {**paper, "stop": "early"}, args.p_high),
        ("mlt", "mlt", dict(paper), args.p_low),
        ("optireduce-fixed", "optireduce", {"optireduce_mode": "fixed"}, 0.0),
        ("optireduce", "optireduce", {"optireduce_mode": "adaptive"}, 0.0),
    ]
    if loss <= args.reliable_max_loss:
        rows.append(("reliable", "reliable", {}, 0.0))
    return rows


def summarize(label: str, eps: float, loss: float, res: list[RankResult]) -> dict:
    def per_round(key: str, agg=np.max) -> np.ndarray:
        return agg([[s[key] for s in r.stats] for r in res], axis=0)

    lat = per_round("latency_ms")
    sc, ga = per_round("passes_scatter"), per_round("passes_gather")
    sent = per_round("bytes", np.sum)
    skipped = per_round("skipped_scatter", np.sum) + per_round("skipped_gather", np.sum)
    caps = np.array([[s["cap_hit"] for s in r.stats] for r in res]).any(axis=0)
    p50 = float(np.median(lat))
    passes = float(np.median(sc + ga))
    predicted = math.log(eps) / math.log(loss) if eps and 0 < loss < 1 else math.nan
    return {
        "loss": loss,
        "transport": label,
        "epsilon": eps,
        "round_ms": round(p50, 1),
        "passes": f"{np.median(sc):g}/{np.median(ga):g}",
        "n_predicted": round(predicted, 1) if not math.isnan(predicted) else "",
        "pass_ms": round(float(np.median(lat / np.maximum(sc + ga, 1))), 2),
        "sent_kib": round(float(np.mean(sent)) / 1024, 1),
        "skipped_kib": round(float(np.mean(skipped)) / 1024, 1),
        "loss_max": round(float(per_round("delivered_loss").max()), 4),
        "cap_hits": int(caps.sum()),
        "_p50": p50,
        "_passes": passes,
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.paper_round",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--world", type=int, default=4, help="ranks (with ps: workers)")
    ap.add_argument("--size", type=float, default=1.0, help="bucket, MiB of float32")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds per row")
    ap.add_argument("--rate", type=float, default=100.0, help="per-rank pacing, Mbit/s")
    ap.add_argument("--losses", default="0,0.6,0.7,0.8,0.9", help="loss rates, comma-separated")
    ap.add_argument("--p-low", type=float, default=0.008, help="mlt's fixed tolerance")
    ap.add_argument("--p-high", type=float, default=0.408, help="dblp's tolerance")
    ap.add_argument("--reliable-max-loss", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--collective",
        choices=("tar", "ps"),
        default="tar",
        help="tar (transpose all-reduce) or ps (workers + one parameter server)",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per row")
    args = ap.parse_args(argv)
    args.loss_list = [float(x) for x in args.losses.split(",")]
    if args.world < 2:
        ap.error("--world must be >= 2 (with ps: workers, besides the server)")
    if not all(0 <= x < 1 for x in args.loss_list):
        ap.error("--losses: each must be in [0, 1)")
    if not 0 < args.p_low < 1 or not 0 < args.p_high < 1:
        ap.error("--p-low and --p-high must be in (0, 1)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    n = int(args.size * MIB) // 4
    out = []
    ps = args.collective == "ps"
    with LoopbackJob(args.world, seed=args.seed, server=ps) as job:
        for loss in args.loss_list:
            rows = []
            for label, policy, extra, eps in rows_for(args, loss):
                cfg = {"rate_mbps": args.rate, "drop": loss, "seed": args.seed, **extra}
                case = Case(policy, n, args.rounds, cfg, eps, calibrate_rounds=5, seed=args.seed,
                            collective=args.collective)  # fmt: skip
                rows.append(summarize(label, eps, loss, job.run(case)))
            mlt = next(r["_p50"] for r in rows if r["transport"] == "mlt")
            for r in rows:
                r["vs_mlt"] = round(mlt / r["_p50"], 2) if r["_p50"] else ""
            out += rows
    limits = {
        "fixed_cost_limit": round(math.log(args.p_low) / math.log(args.p_high), 2),
        "byte_cost_limit": round((1 - args.p_low) / (1 - args.p_high), 2),
    }
    if args.json:
        for r in out:
            print(json.dumps({k: v for k, v in r.items() if not k.startswith("_")} | limits))
        return 0
    keys = [k for k in out[0] if not k.startswith("_")]
    print(f"prediction for dblp's vs_mlt: between {limits['byte_cost_limit']} (a pass costs its "
          f"bytes) and {limits['fixed_cost_limit']} (a pass costs a fixed time)")  # fmt: skip
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in out:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    print("tcp: Gloo over TCP is not this data path (no injected loss reaches it): no row.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
