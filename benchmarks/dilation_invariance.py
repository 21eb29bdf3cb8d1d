"""Time dilation changes nothing it should not (issue 11): the same run at D=1 and D=4.

    python -m benchmarks.dilation_invariance [--dilations 1,4] [--burst moderate] [--workers 2]

One `testbed run --workload allreduce` per dilation (one after the other), the same seed and
preset, and one row each: the fidelity verdict, calm p50 and the in-burst rounds' median over
it, both read from the tables (which hold emulated, undilated times), and each figure's
difference from the first dilation's against `TOLERANCE`. A dilated run that is faithful and
agrees shows that D stretches the emulation without changing what it measures. Needs root.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.allreduce_runs import add_run_arguments, allreduce_run
from benchmarks.dblp_tail import rounds_of

#: Issue 11: undilated calm p50 and the in-burst/calm ratio agree within 10%.
TOLERANCE = 0.10


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dilation_invariance")
    ap.add_argument("--dilations", default="1,4")
    ap.add_argument("--burst", default="moderate", help="a preset whose targets 2 workers have")
    ap.add_argument("--seed", type=int, default=3)
    add_run_arguments(ap, size_mib=1.0)
    ap.set_defaults(workers=2, rounds=60)
    args = ap.parse_args(argv)
    print(f"{args.transport}, {args.workers} workers, {args.size_mib:g} MiB x {args.rounds} "
          f"rounds, --burst {args.burst}, seed {args.seed}; tables in emulated time")  # fmt: skip
    print("| D | faithful | calm p50 ms | in-burst rounds | in-burst p50 / calm p50 | "
          "Δ calm p50 | Δ ratio | within 10% |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    first = None
    ok = True
    for d in (float(x) for x in args.dilations.split(",")):
        s = allreduce_run(
            f"dilation-{d:g}", "--burst", args.burst, "--dilation", f"{d:g}",
            "--transport", args.transport, "--rounds", str(args.rounds),
            "--size-mib", str(args.size_mib), "--workers", str(args.workers),
            "--seed", str(args.seed),
        )  # fmt: skip
        rl = rounds_of(s)
        calm = float(rl.loc[~rl["in_burst"], "latency_ms"].median())
        hit = rl.loc[rl["in_burst"], "latency_ms"]
        ratio = float(hit.median()) / calm if len(hit) else float("nan")
        first = first or (calm, ratio)
        d_calm, d_ratio = calm / first[0] - 1, ratio / first[1] - 1
        agree = abs(d_calm) <= TOLERANCE and abs(d_ratio) <= TOLERANCE
        ok &= agree and bool(s.get("faithful"))
        print(
            f"| {d:g} | {s.get('faithful')} | {calm:.1f} | {len(hit)} | {ratio:.3f} "
            f"| {d_calm:+.1%} | {d_ratio:+.1%} | {'yes' if agree else 'NO'} |"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
