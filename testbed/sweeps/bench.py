"""`make bench`: a CI-sized benchmark on the default fat-tree, printed as tables.

Two workloads, each over the same seeded bursts for every variant:
- `allreduce` (communication alone: how single-round latency is measured under bursts):
  tcp (RTO-min 200 and 5 ms), optireduce (adaptive, fixed), dblp, reliable, x none / heavy,
  plus `sham` (heavy's cross-traffic sent where no worker listens: the CPU cost of a burst
  without its network effect) for tcp, optireduce and dblp;
- `train` (end-to-end time and accuracy): tcp, optireduce, dblp, dblp with the phase
  controller off, x none / heavy.
The report sets the measured ratios vs `optireduce` beside the published ones (24.4% mean /
33.9% max end-to-end reduction, up to 5.88x faster at a burst event). Re-running resumes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from testbed.base.terminal import wall_time

ALLREDUCE_VARIANTS = {
    "tcp": {"transport": "tcp"},
    "tcp-rto5ms": {"transport": "tcp", "tcp_rto_min_ms": 5.0},
    "optireduce": {"transport": "optireduce"},
    "optireduce-fixed": {"transport": "optireduce", "optireduce_mode": "fixed"},
    "dblp": {"transport": "dblp"},
    "reliable": {"transport": "reliable"},
}
SHAM_VARIANTS = ("tcp", "optireduce", "dblp")
TRAIN_VARIANTS = {
    "tcp": {"transport": "tcp"},
    "optireduce": {"transport": "optireduce"},
    "dblp": {"transport": "dblp"},
    "dblp-phase-off": {"transport": "dblp", "phase": "off"},
}
# 1 MiB rounds (~0.1 s at 100 Mbit/s) are shorter than heavy's gaps between bursts, so
# rounds fall both inside and outside burst windows of the same run.
ALLREDUCE_BASE = {"workload": "allreduce", "size_mib": 1.0, "rounds": 60, "interval_ms": 50.0}
TRAIN_BASE = {"workload": "train", "steps": 40}


def build_plan(repeats: int = 1, quick: bool = False):
    from testbed.spec import RunSpec, hash_of
    from testbed.sweeps import sweep_plan

    base = RunSpec().measured()
    ar = {**base, **ALLREDUCE_BASE}
    tr = {**base, **TRAIN_BASE}
    if quick:
        ar["rounds"], tr["steps"] = 12, 20
    plan = sweep_plan.expand_variants(ar, ALLREDUCE_VARIANTS, ("none", "heavy"), repeats, hash_of)
    sham = {k: ALLREDUCE_VARIANTS[k] for k in SHAM_VARIANTS}
    plan += sweep_plan.expand_variants(ar, sham, ("sham",), repeats, hash_of)
    plan += sweep_plan.expand_variants(tr, TRAIN_VARIANTS, ("none", "heavy"), repeats, hash_of)
    return plan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench"))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="fewer rounds/steps (a smoke test)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("make bench needs root (network namespaces, tc): run `make bench` as root")
        return 2
    from testbed.run.dilation import cost
    from testbed.sweeps.sweep_runner import report_plan, run_plan

    plan = build_plan(args.repeats, args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    result = run_plan(plan, args.out)
    report_plan(plan, args.out)
    print(
        f"bench: {result.ran} run(s) now, {result.skipped} reused, {len(result.failed)} failed"
        + (" (interrupted)" if result.interrupted else "")
        + f"; wall time {wall_time(time.monotonic() - started)}"
    )
    print(cost([args.out / p.run_id for p in plan]))
    return 1 if result.failed or result.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
