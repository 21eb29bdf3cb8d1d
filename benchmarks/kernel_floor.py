"""The CPU per MiB any sender pays inside the emulated fat-tree: the floor under issue 11's targets.

    python -m benchmarks.kernel_floor [--mtus 1500,9000] [--seconds 5] [--mbps 95]

iperf3 — C, one `sendto` per datagram, no Python — sends UDP datagrams as large as the MTU
allows from h1 to h13 (different pods: 5 router hops, each an HTB-shaped veth pair) at the
transport's default pacing rate, once per MTU, on a fresh network each time. iperf3's `-J`
report gives the CPU its sender and receiver processes used (user + system: the kernel's
forwarding through the router namespaces runs mostly in the sender's system time, as it does
for the transport). One row per MTU: CPU ms per MiB delivered, sender and receiver apart, beside
the transport's targets (`transport_fattree_cpu.TARGET_MS_PER_MIB`), which count the same
thing for the transport's engine threads. A transport cannot go below this by compiling its
own loop. Needs root; run it alone.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.transport_fattree_cpu import TARGET_MS_PER_MIB

MIB = 1 << 20
SRC, DST = "h1", "h13"
IP_UDP_HEADERS = 28


def floor_at(mtu: int, seconds: float, mbps: float) -> dict:
    """One iperf3 UDP run h1 -> h13 on a fresh k=4 fat-tree at `mtu`: its -J summary."""
    from testbed.network.live import live_network
    from testbed.run import probes
    from topologies import fattree

    with live_network(fattree(4), seed=0, mtu=mtu) as net, probes.iperf3_server(net, DST):
        argv = ["iperf3", "-c", net.topo.host_ip(DST), "-p", str(probes.CONTROL_PORT),
                "--cport", str(probes.DATA_PORT), "-u", "-b", f"{mbps:g}M",
                "-l", str(mtu - IP_UDP_HEADERS), "-t", f"{seconds:g}", "-J"]  # fmt: skip
        out = net.exec(SRC, argv, timeout=seconds + 20)
    result = probes.iperf3_result(out, f"iperf3 {SRC} -> {DST} at MTU {mtu}")
    end = result["end"]
    cpu = end["cpu_utilization_percent"]
    received = end["sum"]["bytes"] * (1 - end["sum"]["lost_percent"] / 100) / MIB
    wall = end["sum"]["seconds"]
    return {
        "mtu": mtu,
        "mbps": end["sum"]["bits_per_second"] / 1e6,
        "lost_percent": end["sum"]["lost_percent"],
        "sender_ms_per_mib": cpu["host_total"] / 100 * wall * 1e3 / received,
        "receiver_ms_per_mib": cpu["remote_total"] / 100 * wall * 1e3 / received,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_floor")
    ap.add_argument("--mtus", default="1500,9000")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--mbps", type=float, default=95.0, help="the testbed's default pacing")
    args = ap.parse_args(argv)
    print(f"iperf3 UDP {SRC} -> {DST} through the k=4 fat-tree, {args.mbps:g} Mbit/s, "
          f"{args.seconds:g} s per MTU")  # fmt: skip
    print("| mtu | Mbit/s | lost % | sender ms/MiB | receiver ms/MiB | total ms/MiB | "
          "transport target |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for mtu in (int(m) for m in args.mtus.split(",")):
        r = floor_at(mtu, args.seconds, args.mbps)
        total = r["sender_ms_per_mib"] + r["receiver_ms_per_mib"]
        print(
            f"| {mtu} | {r['mbps']:.1f} | {r['lost_percent']:.2f} | "
            f"{r['sender_ms_per_mib']:.2f} | {r['receiver_ms_per_mib']:.2f} | {total:.2f} | "
            f"{TARGET_MS_PER_MIB.get(mtu, float('nan')):.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
