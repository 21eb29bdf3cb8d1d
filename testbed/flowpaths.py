"""Which path each worker flow takes: the kernel's own ECMP choice, hop by hop.

Burst presets target links every worker flow crosses, but the record is what makes that
checkable: for each UDP flow of the transport (5-tuple fixed by rank and port index), ask
every router on the way `ip route get ... iif IN ipproto udp sport S dport D` — the same
multipath hash the forwarding path uses — and follow the chosen egress to the next node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from testbed.kernel import run

MAX_HOPS = 12
_DEV = re.compile(r"\bdev (\S+)")


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str
    sport: int
    dport: int


def udp_flows(hosts: tuple[str, ...], base_port: int, ports_per_peer: int) -> list[Flow]:
    """The transport's flows: rank r's socket i (base + r*k + i) sends to each peer's socket i."""
    flows = []
    for s, src in enumerate(hosts):
        for d, dst in enumerate(hosts):
            if s != d:
                for i in range(ports_per_peer):
                    sport = base_port + s * ports_per_peer + i
                    dport = base_port + d * ports_per_peer + i
                    flows.append(Flow(src, dst, sport, dport))
    return flows


def egress_dev(route_get_line: str) -> str | None:
    m = _DEV.search(route_get_line)
    return m.group(1) if m else None


def interface_peers(topo) -> dict[tuple[str, str], str]:
    """(node, its interface name) -> the node at the other end."""
    out = {}
    for link in topo.links:
        out[(link.a, topo.intf(link.a, link.b))] = link.b
        out[(link.b, topo.intf(link.b, link.a))] = link.a
    return out


def trace(net, flows: list[Flow]) -> list[dict]:
    """Each flow's node path as the kernel would forward it (one query per flow per hop)."""
    topo = net.topo
    peers = interface_peers(topo)
    routers = {n.name for n in topo.routers}
    out = []
    for f in flows:
        src_ip, dst_ip = topo.host_ip(f.src), topo.host_ip(f.dst)
        path, node, iif = [f.src], f.src, None
        for _ in range(MAX_HOPS):
            argv = ["ip", "-o", "route", "get", dst_ip, "from", src_ip]
            if iif is not None:
                argv += ["iif", iif]
            argv += ["ipproto", "udp", "sport", str(f.sport), "dport", str(f.dport)]
            dev = egress_dev(run([*net.prefix(node), *argv], timeout=5))
            nxt = peers.get((node, dev)) if dev else None
            if nxt is None:
                break
            path.append(nxt)
            if nxt not in routers:
                break
            iif, node = topo.intf(nxt, node), nxt
        out.append(
            {"src": f.src, "dst": f.dst, "proto": "udp", "sport": f.sport, "dport": f.dport,
             "src_ip": src_ip, "dst_ip": dst_ip, "path": path, "complete": path[-1] == f.dst}
        )  # fmt: skip
    return out
