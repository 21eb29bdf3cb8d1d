"""The fidelity verdict, validated both ways: it must flag a run while busy loops steal the CPU,
and pass the same run dilated (issue 11).

    python -m benchmarks.fidelity_control [--busy 2] [--dilation 4] [--rounds 30]

Three `testbed run --workload allreduce --burst none` runs, one after the other: alone; while
`--busy` processes spin on the CPU (started here, ended here by their PIDs); and the same with
`--dilation D`. Prints per run: the verdict, its late rounds, calm rounds over the pacing bound,
the undilated p50 and the wall time. Needs root.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from contextlib import contextmanager

from benchmarks.allreduce_runs import add_run_arguments, allreduce_run, calm_bound_ratio

SPIN = "while True: pass"


@contextmanager
def busy_loops(n: int):
    """n processes that only burn CPU; each is ended by its own PID."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def run(args: argparse.Namespace, label: str, dilation: float) -> dict:
    return allreduce_run(
        label, "--transport", args.transport, "--rounds", str(args.rounds),
        "--size-mib", str(args.size_mib), "--workers", str(args.workers),
        "--dilation", str(dilation),
    )  # fmt: skip


def row(label: str, s: dict) -> str:
    f = s.get("fidelity") or {}
    return (
        f"| {label} | {s.get('dilation')} | {s.get('faithful')} "
        f"| {f.get('late_rounds')}/{f.get('judged_rounds')} | {calm_bound_ratio(s):.2f} "
        f"| {s.get('p50_ms')} | {s.get('wall_s')} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fidelity_control")
    ap.add_argument("--busy", type=int, default=2, help="CPU-burning processes")
    ap.add_argument("--dilation", type=float, default=4.0)
    add_run_arguments(ap, size_mib=1.0)
    args = ap.parse_args(argv)
    print("| run | dilation | faithful | late rounds | calm / bound | p50 ms | wall s |")
    print("|---|---|---|---|---|---|---|")
    print(row("alone", run(args, "alone", 1.0)), flush=True)
    with busy_loops(args.busy):
        print(row(f"{args.busy} busy loops", run(args, "busy", 1.0)), flush=True)
        label = f"{args.busy} busy loops, dilated"
        print(row(label, run(args, "busy-dilated", args.dilation)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
