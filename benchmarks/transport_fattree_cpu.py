"""CPU cost of the UDP transport inside the emulated fat-tree, per MTU (issue 11's targets).

    python -m benchmarks.transport_fattree_cpu [--mtus 1500,9000] [--paths compiled,python]
        [--rounds 30] [--size-mib 4] [--dilation 1]

Runs `testbed run --workload allreduce --burst none` once per MTU and data path, one after
the other (never two emulations at once), and prints one row per run: the transport loops' CPU
per MiB sent (all ranks; the kernel's forwarding through the router hops is billed to the
sending thread, so this is the whole cost of a MiB on this machine), calm p50, p50 over the
2(N-1)/N S/B bound, and the fidelity verdict; then, per MTU, the Python data path's CPU over
the compiled one's (`--no-fastpath` against the default). Needs root.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.allreduce_runs import add_run_arguments, allreduce_run, calm_bound_ratio

TARGET_MS_PER_MIB = {1500: 10.0, 9000: 4.0}


PATH_FLAGS = {"compiled": "--fastpath", "python": "--no-fastpath"}


def run_one(mtu: int, rx: str, args: argparse.Namespace) -> dict:
    return allreduce_run(
        f"cpu-mtu{mtu}-{rx}", "--transport", args.transport, "--rounds", str(args.rounds),
        "--size-mib", str(args.size_mib), "--workers", str(args.workers), "--mtu", str(mtu),
        "--bw", str(args.bw), "--dilation", args.dilation, PATH_FLAGS[rx],
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.transport_fattree_cpu")
    ap.add_argument("--mtus", default="1500,9000")
    add_run_arguments(ap, size_mib=4.0)
    ap.add_argument("--bw", type=float, default=100.0)
    ap.add_argument("--paths", default="compiled,python", help="data paths to run, in order")
    ap.add_argument("--dilation", default="1", help="D, or auto (the CPU targets are at D=1)")
    args = ap.parse_args(argv)
    paths = args.paths.split(",")
    if unknown := set(paths) - set(PATH_FLAGS):
        ap.error(f"--paths: unknown {sorted(unknown)}; choose from {sorted(PATH_FLAGS)}")
    print("| mtu | path | cpu ms/MiB | target | calm p50 ms | p50/bound | faithful | dilation |")
    print("|---|---|---|---|---|---|---|---|")
    cpu: dict[tuple[int, str], float] = {}
    for mtu in (int(m) for m in args.mtus.split(",")):
        for rx in paths:
            s = run_one(mtu, rx, args)
            cpu[mtu, rx] = s.get("cpu_ms_per_mib") or float("nan")
            print(
                f"| {mtu} | {rx} | {cpu[mtu, rx]:.2f} "
                f"| {TARGET_MS_PER_MIB.get(mtu, float('nan')):.0f} "
                f"| {s.get('p50_no_burst_ms', s.get('p50_ms', float('nan'))):.1f} "
                f"| {calm_bound_ratio(s):.2f} "
                f"| {s.get('faithful')} | {s.get('dilation', 1.0)} |",
                flush=True,
            )
    for mtu in sorted({m for m, _ in cpu}):
        if (mtu, "python") in cpu and (mtu, "compiled") in cpu:
            ratio = cpu[mtu, "python"] / cpu[mtu, "compiled"]
            print(f"MTU {mtu}: the Python data path costs {ratio:.2f}x the compiled one's CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
