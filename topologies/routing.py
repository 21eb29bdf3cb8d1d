"""Per-router routing tables as data: ECMP towards the hosts' subnets along shortest paths.

Every router gets one route per host /24 it does not own, whose next hops are all neighbours
one hop closer to the subnet's access router. In a fat-tree or leaf-spine that is exactly
"ECMP up, specific down": an edge router spreads over all its aggregation routers, a core router
has a single next hop into the destination pod. An access router holds a /32 per attached host.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from dataclasses import dataclass

from topologies.model import Topology


@dataclass(frozen=True)
class NextHop:
    """`via` is the peer's address on the shared link (None for a directly attached host)."""

    via: str | None
    dev: str
    peer: str


@dataclass(frozen=True)
class Route:
    dst: str  # CIDR
    nexthops: tuple[NextHop, ...]

    @property
    def ecmp(self) -> bool:
        return len(self.nexthops) > 1


Tables = dict[str, tuple[Route, ...]]


def routes(topology: Topology) -> Tables:
    """Every router's table: /32 per attached host, then one (ECMP) route per remote /24."""
    t = topology
    owners: dict[str, str] = {}
    for h in t.hosts:
        owners.setdefault(str(t.host_subnet(h.name)), t.access_router(h.name))
    tables: dict[str, list[Route]] = {r.name: [] for r in t.routers}
    for h in t.hosts:
        gw = t.access_router(h.name)
        tables[gw].append(
            Route(f"{t.host_ip(h.name)}/32", (NextHop(None, t.intf(gw, h.name), h.name),))
        )
    router_names = {r.name for r in t.routers}
    for subnet, owner in owners.items():
        dist = _distances(t, owner, router_names)
        for r in t.routers:
            if r.name == owner or r.name not in dist:
                continue
            hops = tuple(
                NextHop(t.addr(peer, r.name)[0], t.intf(r.name, peer), peer)
                for peer in t.neighbors(r.name)
                if dist.get(peer) == dist[r.name] - 1
            )
            tables[r.name].append(Route(subnet, hops))
    return {name: tuple(rs) for name, rs in tables.items()}


def _distances(t: Topology, src: str, routers: set[str]) -> dict[str, int]:
    dist = {src: 0}
    todo = deque([src])
    while todo:
        cur = todo.popleft()
        for peer in t.neighbors(cur):
            if peer in routers and peer not in dist:
                dist[peer] = dist[cur] + 1
                todo.append(peer)
    return dist


def lookup(tables: Tables, router: str, ip: str) -> Route | None:
    """Longest-prefix match in one router's table."""
    addr = ipaddress.IPv4Address(ip)
    matches = [rt for rt in tables[router] if addr in ipaddress.IPv4Network(rt.dst)]
    return max(matches, key=lambda rt: ipaddress.IPv4Network(rt.dst).prefixlen, default=None)


def equal_cost_paths(topology: Topology, tables: Tables, src: str, dst: str) -> int:
    """Number of distinct router paths the tables offer from host `src` to host `dst`.

    Raises ValueError on a routing loop or black hole, so a test of path counts also tests
    that every path arrives.
    """
    ip = topology.host_ip(dst)

    def walk(router: str, depth: int) -> int:
        if depth > len(tables):
            raise ValueError(f"routing loop towards {dst} at {router}")
        rt = lookup(tables, router, ip)
        if rt is None:
            raise ValueError(f"{router} has no route to {dst} ({ip})")
        total = 0
        for nh in rt.nexthops:
            total += 1 if nh.peer == dst else walk(nh.peer, depth + 1)
        return total

    return walk(topology.access_router(src), 0)
