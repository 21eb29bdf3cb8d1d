"""The immutable description of a network: nodes, links, addresses, interface names.

A `Topology` is pure data. It knows every address and every interface name of the
network it describes, so routes, shaping commands and tests can be computed without
bringing anything up. `testbed/network.py` is the only place that turns it into a
live network.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

Kind = Literal["host", "router"]
Tier = Literal["host", "edge", "aggregation", "core", "leaf", "spine"]
TIERS: tuple[str, ...] = ("host", "edge", "aggregation", "core", "leaf", "spine")
KINDS: tuple[str, ...] = ("host", "router")

# Linux caps interface names at 15 bytes (IFNAMSIZ - 1).
IFNAME_MAX = 15
# Router-to-router links get /31 subnets from here (RFC 3021), so they never overlap hosts' 10/8.
P2P_BASE = ipaddress.IPv4Address("172.16.0.0")
P2P_SPACE = ipaddress.IPv4Network("172.16.0.0/12")
HOST_PREFIXLEN = 24


class TopologyError(ValueError):
    """A topology that cannot be built; the message names the bad node or link."""


@dataclass(frozen=True)
class Node:
    name: str
    kind: Kind
    tier: Tier
    pod: int | None = None


@dataclass(frozen=True, order=True)
class Direction:
    """One direction of a link: the egress of `src` towards `dst`, written ``src->dst``.

    The written form is what the `bursts` table and `bursts show` hold. Node names are letters,
    digits and _ (all above "-"), so directions sort as their written forms do.
    """

    src: str
    dst: str

    def __str__(self) -> str:
        return f"{self.src}->{self.dst}"

    @classmethod
    def parse(cls, text: str) -> Direction:
        src, arrow, dst = text.partition("->")
        if not (arrow and src and dst) or "->" in dst:
            raise ValueError(f"link direction {text!r}: expected 'node->peer'")
        return cls(src, dst)


@dataclass(frozen=True)
class Link:
    """One full-duplex link. `a` is the end nearer the hosts: a->b is the uplink direction."""

    a: str
    b: str
    mbps: float
    queue: int
    delay_ms: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.a}-{self.b}"

    @property
    def up(self) -> Direction:
        return Direction(self.a, self.b)

    @property
    def down(self) -> Direction:
        return Direction(self.b, self.a)


@dataclass(frozen=True)
class Topology:
    """Nodes, links and host addresses; every derived fact (interfaces, subnets) is computed.

    `host_addrs` holds (host, address) pairs. The hosts behind one access router share one /24
    whose `.1` is their gateway on that router.
    """

    name: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    host_addrs: tuple[tuple[str, str], ...]
    params: tuple[tuple[str, object], ...] = field(default=())

    def __post_init__(self) -> None:
        _validate(self)

    # --- lookups -------------------------------------------------------------------------
    @cached_property
    def _by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def _links_of(self) -> dict[str, list[Link]]:
        out: dict[str, list[Link]] = defaultdict(list)
        for link in self.links:
            out[link.a].append(link)
            out[link.b].append(link)
        return out

    @cached_property
    def _link_index(self) -> dict[frozenset[str], int]:
        return {frozenset((lk.a, lk.b)): i for i, lk in enumerate(self.links)}

    @property
    def hosts(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.kind == "host")

    @property
    def routers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.kind == "router")

    @property
    def addresses(self) -> dict[str, str]:
        return dict(self.host_addrs)

    def node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in topology {self.name!r}") from None

    def link(self, a: str, b: str) -> Link:
        i = self._link_index.get(frozenset((a, b)))
        if i is None:
            raise KeyError(f"no link between {a!r} and {b!r} in topology {self.name!r}")
        return self.links[i]

    def links_of(self, name: str) -> tuple[Link, ...]:
        """The node's links in interface order (eth0, eth1, ...)."""
        self.node(name)
        return tuple(self._links_of.get(name, ()))

    def neighbors(self, name: str) -> tuple[str, ...]:
        return tuple(lk.b if lk.a == name else lk.a for lk in self.links_of(name))

    def intf(self, node: str, peer: str) -> str:
        """Interface name of `node` on its link to `peer`: `<node>-eth<i>`, i in link order."""
        for i, lk in enumerate(self.links_of(node)):
            if peer in (lk.a, lk.b) and lk.a != lk.b:
                return f"{node}-eth{i}"
        raise KeyError(f"no link between {node!r} and {peer!r} in topology {self.name!r}")

    # --- addresses -----------------------------------------------------------------------
    def host_ip(self, name: str) -> str:
        try:
            return self.addresses[name]
        except KeyError:
            raise KeyError(f"{name!r} is not a host of topology {self.name!r}") from None

    def gateway(self, host: str) -> str:
        """The host's default gateway: `.1` of its /24, held by its access router."""
        return str(self.host_subnet(host).network_address + 1)

    def host_subnet(self, host: str) -> ipaddress.IPv4Network:
        return ipaddress.ip_network(f"{self.host_ip(host)}/{HOST_PREFIXLEN}", strict=False)

    def access_router(self, host: str) -> str:
        (peer,) = self.neighbors(host)
        return peer

    def addr(self, node: str, peer: str) -> tuple[str, int]:
        """(address, prefix length) of `node`'s interface towards `peer`."""
        lk = self.link(node, peer)
        if self.node(node).kind == "host":
            return self.host_ip(node), HOST_PREFIXLEN
        if self.node(peer).kind == "host":
            return self.gateway(peer), 32
        base = P2P_BASE + 2 * self._p2p_index[frozenset((lk.a, lk.b))]
        return str(base if node == lk.a else base + 1), 31

    @cached_property
    def _p2p_index(self) -> dict[frozenset[str], int]:
        kinds = {n.name: n.kind for n in self.nodes}
        pairs = [lk for lk in self.links if kinds[lk.a] == kinds[lk.b] == "router"]
        return {frozenset((lk.a, lk.b)): i for i, lk in enumerate(pairs)}

    def summary(self) -> dict[str, object]:
        """The JSON shape of `testbed topo show --json`."""
        return {
            "name": self.name,
            "hosts": [n.name for n in self.hosts],
            "routers": [n.name for n in self.routers],
            "links": [[lk.a, lk.b, lk.mbps, lk.queue] for lk in self.links],
            "addresses": self.addresses,
        }


def _validate(t: Topology) -> None:
    seen: set[str] = set()
    for n in t.nodes:
        if not n.name or not all(c.isalnum() or c == "_" for c in n.name):
            raise TopologyError(f"node {n.name!r}: names may hold only letters, digits and _")
        if n.name in seen:
            raise TopologyError(f"node {n.name!r}: duplicate name")
        seen.add(n.name)
        if n.kind not in KINDS:
            raise TopologyError(f"node {n.name!r}: kind {n.kind!r} is not one of {KINDS}")
        if n.tier not in TIERS:
            raise TopologyError(f"node {n.name!r}: tier {n.tier!r} is not one of {TIERS}")
        if (n.kind == "host") != (n.tier == "host"):
            raise TopologyError(f"node {n.name!r}: hosts (and only hosts) have tier 'host'")
    kinds = {n.name: n.kind for n in t.nodes}
    degree: dict[str, int] = defaultdict(int)
    pairs: set[frozenset[str]] = set()
    for lk in t.links:
        for end in (lk.a, lk.b):
            if end not in kinds:
                raise TopologyError(f"link {lk.name}: unknown node {end!r}")
        if lk.a == lk.b:
            raise TopologyError(f"link {lk.name}: a link needs two different nodes")
        pair = frozenset((lk.a, lk.b))
        if pair in pairs:
            raise TopologyError(f"link {lk.name}: duplicate link")
        pairs.add(pair)
        if not lk.mbps > 0:
            raise TopologyError(f"link {lk.name}: mbps must be > 0, got {lk.mbps}")
        if lk.queue < 1:
            raise TopologyError(f"link {lk.name}: queue must be >= 1 packet, got {lk.queue}")
        if lk.delay_ms < 0:
            raise TopologyError(f"link {lk.name}: delay_ms must be >= 0, got {lk.delay_ms}")
        if kinds[lk.a] == kinds[lk.b] == "host":
            raise TopologyError(f"link {lk.name}: hosts connect only to routers")
        degree[lk.a] += 1
        degree[lk.b] += 1
    for name in kinds:
        intf = f"{name}-eth{max(degree[name] - 1, 0)}"
        if len(intf) > IFNAME_MAX:
            raise TopologyError(
                f"node {name!r}: interface name {intf!r} exceeds {IFNAME_MAX} characters"
            )
    if len(pairs) - sum(1 for n in t.nodes if n.kind == "host") > 2**19:
        raise TopologyError(f"topology {t.name!r}: too many router links for {P2P_SPACE}")
    _validate_hosts(t, kinds, degree)


def _validate_hosts(t: Topology, kinds: dict[str, str], degree: dict[str, int]) -> None:
    addrs = dict(t.host_addrs)
    hosts = [n for n, k in kinds.items() if k == "host"]
    if set(addrs) != set(hosts):
        extra = sorted(set(addrs) ^ set(hosts))
        raise TopologyError(f"host {extra[0]!r}: every host (and only hosts) needs one address")
    peer_of = {lk.a: lk.b for lk in t.links} | {lk.b: lk.a for lk in t.links}
    used: dict[str, str] = {}
    subnet_owner: dict[ipaddress.IPv4Network, str] = {}
    for h in hosts:
        if degree[h] != 1:
            raise TopologyError(f"host {h!r}: a host needs exactly one link, has {degree[h]}")
        try:
            ip = ipaddress.IPv4Address(addrs[h])
        except ValueError:
            raise TopologyError(f"host {h!r}: bad address {addrs[h]!r}") from None
        net = ipaddress.ip_network(f"{ip}/{HOST_PREFIXLEN}", strict=False)
        if ip in (net.network_address, net.network_address + 1, net.broadcast_address):
            raise TopologyError(f"host {h!r}: {ip} is reserved (network, gateway .1, broadcast)")
        if ip in P2P_SPACE:
            raise TopologyError(f"host {h!r}: {ip} is inside the router link space {P2P_SPACE}")
        if str(ip) in used:
            raise TopologyError(f"host {h!r}: address {ip} already used by {used[str(ip)]!r}")
        used[str(ip)] = h
        owner = subnet_owner.setdefault(net, peer_of[h])
        if owner != peer_of[h]:
            raise TopologyError(f"host {h!r}: subnet {net} already belongs to router {owner!r}")
