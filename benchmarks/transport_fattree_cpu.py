"""CPU cost of the UDP transport inside the emulated fat-tree, per MTU (issue 11's targets).

    python -m benchmarks.transport_fattree_cpu [--mtus 1500,9000] [--paths compiled,python]
        [--rounds 30] [--size-mib 4] [--dilation 1]
        [--floor [--group flow,pair] [--floor-seconds 10] [--search 32] [--pacing-us N]]

Runs `testbed run --workload allreduce --burst none` once per MTU and data path, one after
the other (never two emulations at once), and prints one row per run: the transport loops' CPU
per MiB sent (all ranks; the kernel's forwarding through the router hops is billed to the
sending thread, so this is the whole cost of a MiB on this machine), calm p50, p50 over the
2(N-1)/N S/B bound, and the fidelity verdict; then, per MTU, the Python data path's CPU over
the compiled one's (`--no-fastpath` against the default). With `--floor`, each MTU's runs follow
the fair floor of the same network and workers (`kernel_floor --fair`), and a last table gives
each data path's CPU per MiB over the floor's: absolute figures move from sitting to sitting,
a ratio measured side by side does not. Needs root.
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
    from benchmarks import kernel_floor  # it imports this module's targets

    ap = argparse.ArgumentParser(prog="python -m benchmarks.transport_fattree_cpu")
    ap.add_argument("--mtus", default="1500,9000")
    add_run_arguments(ap, size_mib=4.0)
    ap.add_argument("--bw", type=float, default=100.0)
    ap.add_argument("--paths", default="compiled,python", help="data paths to run, in order")
    ap.add_argument("--dilation", default="1", help="D, or auto (the CPU targets are at D=1)")
    ap.add_argument("--floor", action="store_true", help="each MTU's fair floor first; ratios")
    kernel_floor.add_fair_arguments(ap)
    args = ap.parse_args(argv)
    paths = args.paths.split(",")
    if unknown := set(paths) - set(PATH_FLAGS):
        ap.error(f"--paths: unknown {sorted(unknown)}; choose from {sorted(PATH_FLAGS)}")
    groupings = args.group.split(",") if args.floor else []
    if unknown := set(groupings) - set(kernel_floor.GROUPINGS):
        ap.error(f"--group: unknown {sorted(unknown)}; choose from {list(kernel_floor.GROUPINGS)}")
    if args.floor and args.dilation != "1":
        ap.error("--floor: the fair floor runs at D = 1; leave --dilation at 1")
    print("| mtu | path | cpu ms/MiB | target | calm p50 ms | p50/bound | faithful | dilation |")
    print("|---|---|---|---|---|---|---|---|")
    cpu: dict[tuple[int, str], float] = {}
    floors: dict[tuple[int, str], dict] = {}
    for mtu in (int(m) for m in args.mtus.split(",")):
        target = f"{TARGET_MS_PER_MIB.get(mtu, float('nan')):.0f}"
        for grouping in groupings:
            spec = kernel_floor.floor_spec(mtu, args.workers, args.bw, args.transport)
            f = kernel_floor.fair_floor_at(
                spec, grouping, args.floor_seconds, args.search, args.pacing_us
            )
            floors[mtu, grouping] = f
            row = f"| {mtu} | floor ({grouping}) | {f['total_ms_per_mib']:.2f} | {target} |"
            print(row + " | | | 1.0 |", flush=True)
        for rx in paths:
            s = run_one(mtu, rx, args)
            cpu[mtu, rx] = s.get("cpu_ms_per_mib") or float("nan")
            print(
                f"| {mtu} | {rx} | {cpu[mtu, rx]:.2f} | {target} "
                f"| {s.get('p50_no_burst_ms', s.get('p50_ms', float('nan'))):.1f} "
                f"| {calm_bound_ratio(s):.2f} "
                f"| {s.get('faithful')} | {s.get('dilation', 1.0)} |",
                flush=True,
            )
    for mtu in sorted({m for m, _ in cpu}):
        if (mtu, "python") in cpu and (mtu, "compiled") in cpu:
            ratio = cpu[mtu, "python"] / cpu[mtu, "compiled"]
            print(f"MTU {mtu}: the Python data path costs {ratio:.2f}x the compiled one's CPU")
    if floors:
        print_ratios(cpu, floors)
    return 0


def print_ratios(cpu: dict[tuple[int, str], float], floors: dict[tuple[int, str], dict]) -> None:
    """Each fair floor's own figures, then each data path's CPU per MiB over the floors of its
    MTU, measured in this sitting."""
    print()
    for (mtu, grouping), f in floors.items():
        print(
            f"MTU {mtu} fair floor ({grouping}): {f['clients']} iperf3 clients, {f['streams']} "
            f"streams ({f['stream_mbps']:.3f} Mbit/s each, iperf3 pacing timer "
            f"{f['pacing_us']} us), {f['on_twin_path']} on their "
            f"transport twin's path; sender {f['sender_ms_per_mib']:.2f} + receiver "
            f"{f['receiver_ms_per_mib']:.2f} ms/MiB; {f['mbps']:.1f} Mbit/s in all, "
            f"lost {f['lost_percent']:.2f}%"
        )
    print()
    print("| mtu | path | transport ms/MiB | floor | floor ms/MiB | ratio |")
    print("|---|---|---|---|---|---|")
    for (mtu, rx), ms in cpu.items():
        for (fmtu, grouping), f in floors.items():
            if fmtu == mtu:
                floor = f["total_ms_per_mib"]
                print(f"| {mtu} | {rx} | {ms:.2f} | {grouping} | {floor:.2f} | {ms / floor:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
