"""Measurements on a live network: all-pairs reachability, iperf3 throughput, uplink spread.

Shared by `testbed topo check` and the integration tests, so the command and the tests
measure the same way. Traffic stays between hosts of the given network.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass

from testbed.base.kernel import KernelError
from testbed.network.live import LiveNetwork

IPERF_PORT = 5201


@dataclass(frozen=True)
class Reachability:
    reachable: int
    total: int
    unreachable: tuple[tuple[str, str], ...]


def reachability(net: LiveNetwork, timeout_s: float = 1.0, tries: int = 2) -> Reachability:
    """Ping every ordered host pair (one shell per source, its pings in parallel)."""
    topo = net.topo
    hosts = [h.name for h in topo.hosts]
    bad: list[tuple[str, str]] = []
    for src in hosts:
        dsts = [d for d in hosts if d != src]
        probes = " ".join(
            f"(ping -n -q -c1 -W{timeout_s:g} {topo.host_ip(d)} >/dev/null 2>&1"
            f" || ping -n -q -c{tries} -W{timeout_s:g} {topo.host_ip(d)} >/dev/null 2>&1"
            f" || echo {d}) &"
            for d in dsts
        )
        out = net.exec(src, ["sh", "-c", probes + " wait"], timeout=10 + 3 * timeout_s * tries)
        bad += [(src, d) for d in out.split()]
    n = len(hosts) * (len(hosts) - 1)
    return Reachability(n - len(bad), n, tuple(bad))


def iperf3(
    net: LiveNetwork,
    src: str,
    dst: str,
    seconds: float = 3.0,
    parallel: int = 1,
    cport: int | None = None,
) -> float:
    """TCP goodput in Mbit/s (receiver side) of an iperf3 test src -> dst.

    The server is a one-off (`-1`) started by Popen and registered with the network, so it
    cannot outlive the test or the network.
    """
    server = net.node(dst).popen(
        ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    net.register_process(server, f"iperf3 server on {dst}")
    argv = ["iperf3", "-c", net.topo.host_ip(dst), "-p", str(IPERF_PORT), "-J",
            "-t", f"{seconds:g}", "-P", str(parallel)]  # fmt: skip
    if cport is not None:
        argv += ["--cport", str(cport)]
    result: dict = {}
    for _ in range(50):  # the server needs a moment to listen; bounded retries
        result = json.loads(net.exec(src, argv, timeout=seconds + 15))
        # iperf3 3.12 exits 0 with -J even when it fails: the JSON's "error" says why
        error = result.get("error")
        if error is None:
            break
        if "refused" not in error:
            raise KernelError(argv, 1, f"iperf3 on {src}: {error}")
        time.sleep(0.05)
    else:
        raise KernelError(argv, 1, f"iperf3 server on {dst} never accepted a connection")
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
    return result["end"]["sum_received"]["bits_per_second"] / 1e6


def tx_bytes(net: LiveNetwork, node: str) -> dict[str, int]:
    """Bytes sent per interface of `node` (read in its namespace)."""
    data = json.loads(net.exec(node, ["ip", "-j", "-s", "link", "show"]))
    return {d["ifname"]: int(d["stats64"]["tx"]["bytes"]) for d in data}


def uplinks(net: LiveNetwork, router: str) -> list[str]:
    """The router's interfaces towards routers of a higher tier (towards the core)."""
    topo = net.topo
    return [topo.intf(router, lk.b) for lk in topo.links_of(router) if lk.a == router]
