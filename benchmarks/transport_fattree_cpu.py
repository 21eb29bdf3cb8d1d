"""CPU cost of the UDP transport inside the emulated fat-tree, per MTU (issue 11's targets).

    python -m benchmarks.transport_fattree_cpu [--mtus 1500,9000] [--rounds 30] [--size-mib 4]

Runs `testbed run --workload allreduce --burst none` once per MTU, one after the other (never
two emulations at once), and prints one row per run: the transport loops' CPU per MiB sent
(all ranks; the kernel's forwarding through the router hops is billed to the sending thread,
so this is the whole cost of a MiB on this machine), calm p50, p50 over the 2(N-1)/N S/B bound,
and the fidelity verdict. Needs root.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.allreduce_runs import add_run_arguments, allreduce_run, calm_bound_ratio

TARGET_MS_PER_MIB = {1500: 10.0, 9000: 4.0}


def run_one(mtu: int, args: argparse.Namespace) -> dict:
    return allreduce_run(
        f"cpu-mtu{mtu}", "--transport", args.transport, "--rounds", str(args.rounds),
        "--size-mib", str(args.size_mib), "--workers", str(args.workers), "--mtu", str(mtu),
        "--bw", str(args.bw),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.transport_fattree_cpu")
    ap.add_argument("--mtus", default="1500,9000")
    add_run_arguments(ap, size_mib=4.0)
    ap.add_argument("--bw", type=float, default=100.0)
    args = ap.parse_args(argv)
    print("| mtu | cpu ms/MiB | target | calm p50 ms | p50/bound | faithful | dilation |")
    print("|---|---|---|---|---|---|---|")
    for mtu in (int(m) for m in args.mtus.split(",")):
        s = run_one(mtu, args)
        print(
            f"| {mtu} | {s.get('cpu_ms_per_mib') or float('nan'):.2f} "
            f"| {TARGET_MS_PER_MIB.get(mtu, float('nan')):.0f} "
            f"| {s.get('p50_no_burst_ms', s.get('p50_ms', float('nan'))):.1f} "
            f"| {calm_bound_ratio(s):.2f} "
            f"| {s.get('faithful')} | {s.get('dilation', 1.0)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
