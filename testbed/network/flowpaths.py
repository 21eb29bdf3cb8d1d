"""Which path each worker flow takes: the kernel's own ECMP choice, hop by hop.

Burst presets target links every worker flow crosses, but the record is what makes that
checkable: for each UDP flow of the transport (5-tuple fixed by rank and port index), ask
every router on the way `ip -j route get ... iif IN ipproto udp sport S dport D` — the same
multipath hash the forwarding path uses — and follow the chosen egress to the next node.
All flows advance one hop per round; a round asks each node once, its flows' lookups in one
`ip -j -batch -` (one JSON answer per lookup).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.base.kernel import json_documents, run_batch

MAX_HOPS = 12


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


def egress_dev(route_get: list[dict]) -> str | None:
    """The egress interface in one `ip -j route get` answer (None for a route with none)."""
    return route_get[0].get("dev") if route_get else None


def interface_peers(topo) -> dict[tuple[str, str], str]:
    """(node, its interface name) -> the node at the other end."""
    out = {}
    for link in topo.links:
        out[(link.a, topo.intf(link.a, link.b))] = link.b
        out[(link.b, topo.intf(link.b, link.a))] = link.a
    return out


@dataclass
class _Walk:
    flow: Flow
    src_ip: str
    dst_ip: str
    node: str
    iif: str | None = None
    path: list[str] = field(default_factory=list)
    done: bool = False

    def lookup(self) -> list[str]:
        argv = ["ip", "route", "get", self.dst_ip, "from", self.src_ip]
        if self.iif is not None:
            argv += ["iif", self.iif]
        return [*argv, "ipproto", "udp", "sport", str(self.flow.sport),
                "dport", str(self.flow.dport)]  # fmt: skip


def trace(net, flows: list[Flow]) -> list[dict]:
    """Each flow's node path as the kernel would forward it (one `ip` process per node a round)."""
    topo = net.topo
    peers = interface_peers(topo)
    routers = {n.name for n in topo.routers}
    walks = [_Walk(f, topo.host_ip(f.src), topo.host_ip(f.dst), f.src, path=[f.src]) for f in flows]
    for _ in range(MAX_HOPS):
        at: dict[str, list[_Walk]] = {}
        for w in walks:
            if not w.done:
                at.setdefault(w.node, []).append(w)
        if not at:
            break
        for node, here in at.items():
            cmds = [w.lookup() for w in here]
            out = run_batch(cmds, "ip", prefix=net.prefix(node), options=["-j"], timeout=10)
            answers = json_documents(out)
            if len(answers) != len(here):
                raise ValueError(f"{node}: {len(here)} route lookups, {len(answers)} answers")
            for w, answer in zip(here, answers, strict=True):
                dev = egress_dev(answer)
                nxt = peers.get((node, dev)) if dev else None
                if nxt is None:
                    w.done = True
                    continue
                w.path.append(nxt)
                w.done = nxt not in routers
                w.iif, w.node = topo.intf(nxt, node), nxt
    return [
        {"src": w.flow.src, "dst": w.flow.dst, "proto": "udp", "sport": w.flow.sport,
         "dport": w.flow.dport, "src_ip": w.src_ip, "dst_ip": w.dst_ip, "path": w.path,
         "complete": w.path[-1] == w.flow.dst}
        for w in walks
    ]  # fmt: skip
