"""The CPU per MiB any sender pays inside the emulated fat-tree: the floor under issue 11's targets.

    python -m benchmarks.kernel_floor [--mtus 1500,9000] [--seconds 5] [--mbps 95]
    python -m benchmarks.kernel_floor --fair [--group flow,pair] [--workers 4] [--bw 100]
        [--mtus 1500,9000] [--floor-seconds 10] [--search 32] [--pacing-us N]

iperf3 — C, a syscall per datagram, no Python — sends UDP datagrams as large as the MTU allows,
once per MTU, on a fresh network each time. iperf3's `-J` report gives the CPU its sender and
receiver processes used (user + system: the kernel's forwarding through the router namespaces
runs mostly in the sender's system time, as it does for the transport). One row per MTU: CPU
ms per MiB delivered, sender and receiver apart.

Without `--fair`: one flow h1 -> h13 (different pods: 5 router hops, each an HTB-shaped veth
pair) at `--mbps`, beside the transport's targets (`transport_fattree_cpu.TARGET_MS_PER_MIB`).
With `--fair`: the transport's own pattern (floor_pattern.py), every worker to every other at
the pacing rate per pair over as many flows as the transport has, each on its transport twin's
ECMP path where a server port within `--search` candidates gives it one (the table says how
many streams got there), each client waking in the transport's rhythm (`--pacing-us`).
`transport_fattree_cpu --floor` prints the transport's ratio to it. A transport cannot go
below this by compiling its own loop. Needs root; run it alone.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time

from benchmarks.floor_pattern import GROUPINGS, PathSearch, Pattern, iperf3_figures, spec_pattern
from benchmarks.transport_fattree_cpu import TARGET_MS_PER_MIB

SRC, DST = "h1", "h13"
IP_UDP_HEADERS = 28
#: Server port candidates traced per group in one `flowpaths.trace` call.
SEARCH_BATCH = 8
#: Seconds an iperf3 client may take beyond its test (handshake, results exchange).
CLIENT_GRACE_S = 30.0


def floor_at(mtu: int, seconds: float, mbps: float) -> dict:
    """One iperf3 UDP run h1 -> h13 on a fresh k=4 fat-tree at `mtu`: its -J figures."""
    from testbed.network.live import live_network
    from testbed.run import probes
    from topologies import fattree

    with live_network(fattree(4), seed=0, mtu=mtu) as net, probes.iperf3_server(net, DST):
        argv = ["iperf3", "-c", net.topo.host_ip(DST), "-p", str(probes.CONTROL_PORT),
                "--cport", str(probes.DATA_PORT), "-u", "-b", f"{mbps:g}M",
                "-l", str(mtu - IP_UDP_HEADERS), "-t", f"{seconds:g}", "-J"]  # fmt: skip
        out = net.exec(SRC, argv, timeout=seconds + 20)
    result = probes.iperf3_result(out, f"iperf3 {SRC} -> {DST} at MTU {mtu}")
    return {"mtu": mtu, **iperf3_figures([result])}


def floor_spec(mtu: int, workers: int, bw: float, transport: str = "dblp"):
    """The run spec whose transport the fair floor stands for (D = 1, the defaults else)."""
    from testbed.spec import build_spec

    return build_spec(
        workload="allreduce", transport=transport, workers=workers, bw=bw, mtu=mtu, dilation=1.0
    )


def fair_floor_at(
    spec, grouping: str, seconds: float, search: int, pacing_us: int | None = None
) -> dict:
    """The transport's pattern of `spec` as iperf3 flows on a fresh network: its figures, and
    how many streams run on their twin's path. `pacing_us`: iperf3's pacing timer (default:
    the transport's rhythm, `Pattern.pacing_us`)."""
    from testbed.network.live import live_network
    from testbed.run import probes

    pat = spec_pattern(spec, grouping)
    pacing_us = pat.pacing_us if pacing_us is None else pacing_us
    with live_network(spec.topology(), seed=spec.seed, mtu=spec.mtu) as net:
        found = match_paths(net, pat, search)
        outs = _run_pattern(net, pat, found.ports(), seconds, pacing_us)
    results = [probes.iperf3_result(out, what) for out, what in outs]
    return {
        "mtu": spec.mtu,
        "grouping": grouping,
        "clients": len(pat.groups),
        "streams": pat.streams,
        "stream_mbps": pat.stream_bps / 1e6,
        "pacing_us": pacing_us,
        "on_twin_path": found.matched(),
        **iperf3_figures(results),
    }


def match_paths(net, pat: Pattern, budget: int) -> PathSearch:
    """Trace the transport's flows, then each group's server port candidates, SEARCH_BATCH at
    a time, until every stream runs on its twin's path or `budget` candidates are spent."""
    twins = [t for g in pat.groups for t in g.twins]
    found = PathSearch(pat, _paths(net, twins))
    budget = min(budget, pat.max_candidates())
    for c0 in range(0, budget, SEARCH_BATCH):
        tried = [(g, c) for g in found.pending() for c in range(c0, min(c0 + SEARCH_BATCH, budget))]
        if not tried:
            break
        paths = _paths(net, [f for g, c in tried for f in found.flows(g, c)])
        for g, c in tried:
            found.offer(g, c, paths)
    return found


def _paths(net, flows: list) -> dict:
    from testbed.network.flowpaths import Flow, trace

    return {
        Flow(r["src"], r["dst"], r["sport"], r["dport"]): tuple(r["path"])
        for r in trace(net, flows)
    }


def _run_pattern(
    net, pat: Pattern, ports: list[int], seconds: float, pacing_us: int
) -> list[tuple[str, str]]:
    """Every group's server, then every client at once; each client's `-J` text and name."""
    from testbed.run import probes

    with contextlib.ExitStack() as servers:
        for g, port in zip(pat.groups, ports, strict=True):
            servers.enter_context(probes.iperf3_server(net, g.dst, port=port))
        clients: list[tuple[subprocess.Popen, str]] = []
        try:
            for g, port in zip(pat.groups, ports, strict=True):
                argv = ["iperf3", "-c", net.topo.host_ip(g.dst), "-p", str(port),
                        "--cport", str(g.sports[0]), "-P", str(len(g.sports)), "-u",
                        "-b", str(pat.stream_bps), "-l", str(pat.blksize),
                        "--pacing-timer", str(pacing_us), "-t", f"{seconds:g}",
                        "-i", "0", "-J"]  # fmt: skip
                what = f"iperf3 {g.src}:{g.sports[0]} -> {g.dst}:{port} at MTU {pat.mtu}"
                proc = net.node(g.src).popen(  # stderr apart: iperf3 warns there (block > MSS)
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
                net.register_process(proc, what)
                clients.append((proc, what))
            deadline = time.monotonic() + seconds + CLIENT_GRACE_S
            outs = []
            for proc, what in clients:
                try:
                    out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise RuntimeError(f"{what}: no report within {seconds:g} s + grace") from None
                outs.append((out, f"{what} (exit {proc.returncode}; stderr {err[-300:]!r})"))
            return outs
        finally:
            for proc, _ in clients:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(5)


def print_fair_header(pat: Pattern, grouping: str, seconds: float) -> None:
    print(
        f"fair floor: {len(pat.hosts)} workers ({', '.join(pat.hosts)}), each to every other "
        f"at {pat.pair_l2_mbps:.2f} Mbit/s per pair (L2) over {pat.k} flows; grouping "
        f"{grouping}: {len(pat.groups)} iperf3 clients and servers, {seconds:g} s per MTU"
    )


FAIR_HEADER = (
    "| mtu | grouping | streams | -b per stream | pacing timer | on twin's path | Mbit/s (all) "
    "| lost % | sender ms/MiB | receiver ms/MiB | total ms/MiB |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def fair_row(r: dict) -> str:
    return (
        f"| {r['mtu']} | {r['grouping']} | {r['streams']} | {r['stream_mbps']:.3f}M "
        f"| {r['pacing_us']} us "
        f"| {r['on_twin_path']}/{r['streams']} "
        f"| {r['mbps']:.1f} | {r['lost_percent']:.2f} | {r['sender_ms_per_mib']:.2f} "
        f"| {r['receiver_ms_per_mib']:.2f} | {r['total_ms_per_mib']:.2f} |"
    )


def add_fair_arguments(ap: argparse.ArgumentParser) -> None:
    """The fair floor's own knobs (the network and workers come from the caller's)."""
    ap.add_argument("--group", default="flow", help=f"iperf3 per: {' or '.join(GROUPINGS)}")
    ap.add_argument(
        "--floor-seconds", type=float, default=10.0, help="each fair floor's iperf3 duration"
    )
    ap.add_argument(
        "--search", type=int, default=32, help="server ports tried per group for its paths"
    )
    ap.add_argument(
        "--pacing-us", type=int, default=None,
        help="iperf3 --pacing-timer (default: the transport's wake rhythm; 1000: iperf3's)",
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_floor")
    ap.add_argument("--mtus", default="1500,9000")
    ap.add_argument("--seconds", type=float, default=5.0, help="one flow's duration")
    ap.add_argument("--mbps", type=float, default=95.0, help="one flow: the default pacing")
    ap.add_argument("--fair", action="store_true", help="the transport's pattern instead")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--bw", type=float, default=100.0, help="--fair: link rate, Mbit/s")
    add_fair_arguments(ap)
    args = ap.parse_args(argv)
    mtus = [int(m) for m in args.mtus.split(",")]
    if args.fair:
        return fair_main(args, mtus)
    print(f"iperf3 UDP {SRC} -> {DST} through the k=4 fat-tree, {args.mbps:g} Mbit/s, "
          f"{args.seconds:g} s per MTU")  # fmt: skip
    print("| mtu | Mbit/s | lost % | sender ms/MiB | receiver ms/MiB | total ms/MiB | "
          "transport target |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for mtu in mtus:
        r = floor_at(mtu, args.seconds, args.mbps)
        print(
            f"| {mtu} | {r['mbps']:.1f} | {r['lost_percent']:.2f} | "
            f"{r['sender_ms_per_mib']:.2f} | {r['receiver_ms_per_mib']:.2f} | "
            f"{r['total_ms_per_mib']:.2f} | {TARGET_MS_PER_MIB.get(mtu, float('nan')):.0f} |"
        )
    return 0


def fair_main(args: argparse.Namespace, mtus: list[int]) -> int:
    groupings = args.group.split(",")
    if unknown := set(groupings) - set(GROUPINGS):
        raise SystemExit(f"--group: unknown {sorted(unknown)}; choose from {list(GROUPINGS)}")
    for grouping in groupings:
        spec = floor_spec(mtus[0], args.workers, args.bw)
        print_fair_header(spec_pattern(spec, grouping), grouping, args.floor_seconds)
    print(FAIR_HEADER)
    for mtu in mtus:
        for grouping in groupings:
            spec = floor_spec(mtu, args.workers, args.bw)
            r = fair_floor_at(spec, grouping, args.floor_seconds, args.search, args.pacing_us)
            print(fair_row(r))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
