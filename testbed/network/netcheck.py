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
from testbed.network.live import LiveNetwork, live_network
from topologies import Topology

IPERF_PORT = 5201
#: `check` passes when one flow gets this share of the configured rate (and all pairs reach).
MIN_RATE_FRACTION = 0.9


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


def check(t: Topology, seed: int, seconds: float, flows: int) -> tuple[dict, bool]:
    """`testbed topo check`: bring `t` up, test all pairs, one iperf3 flow first to last host,
    then `flows` parallel ones and how they spread over the first host's uplinks; tear down.
    Returns the measures and whether every pair reached and one flow got its rate."""
    src, dst = t.hosts[0].name, t.hosts[-1].name
    configured = t.link(src, t.access_router(src)).mbps
    t0 = time.monotonic()
    with live_network(t, seed=seed) as net:
        bringup = time.monotonic() - t0
        reach = reachability(net)
        mbps = iperf3(net, src, dst, seconds=seconds)
        router = t.access_router(src)
        ups = uplinks(net, router)
        before = tx_bytes(net, router)
        par = iperf3(net, src, dst, seconds=seconds, parallel=flows, cport=42000)
        after = tx_bytes(net, router)
        t1 = time.monotonic()
    teardown = time.monotonic() - t1
    delta = {u: after[u] - before[u] for u in ups}
    total = sum(delta.values()) or 1
    used = sum(1 for d in delta.values() if d > 0.05 * total)
    result = {
        "topology": t.name,
        "reachable_pairs": reach.reachable,
        "total_pairs": reach.total,
        "unreachable": [list(p) for p in reach.unreachable],
        "iperf3_mbps": round(mbps, 2),
        "iperf3_pair": [src, dst],
        "configured_mbps": configured,
        "parallel_flows": flows,
        "parallel_mbps": round(par, 2),
        "uplinks": len(ups),
        "uplinks_used": used,
        "uplink_bytes": delta,
        "bringup_s": round(bringup, 3),
        "teardown_s": round(teardown, 3),
    }
    return result, reach.reachable == reach.total and mbps >= MIN_RATE_FRACTION * configured
