"""What each namespace of a live network must hold, as data: veths, ip/tc batches, sysctls.

Pure (no root): `testbed/network/live.py` executes a plan; tests read it. Neighbours are written as
permanent entries from the deterministic MACs, so the first packets of a run never wait on ARP.
Hosts' /24 is `noprefixroute`: all their traffic (also to a same-edge host) goes through the
gateway, which needs no proxy ARP.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from testbed.network.shaping import leaf_command, shape_commands
from topologies import Topology, routes

OFFLOADS = ("tso", "gso", "gro")  # off, so that queue limits count real (MTU-sized) packets


@dataclass(frozen=True)
class NodePlan:
    name: str
    sysctls: tuple[tuple[str, str], ...]
    ip: tuple[tuple[str, ...], ...]  # `ip ...` argv lists, run through one `ip -batch -`
    tc: tuple[tuple[str, ...], ...]
    intfs: tuple[str, ...]


@dataclass(frozen=True)
class VethPair:
    """One veth pair: `a_intf` in the namespace of link.a, `b_intf` in that of link.b."""

    a: str
    a_intf: str
    a_mac: str
    b: str
    b_intf: str
    b_mac: str


def mac(link_index: int, side: int) -> str:
    """Locally administered unicast MAC, unique per (link, side) within one network."""
    i = link_index
    return f"02:db:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}:{side:02x}"


def hash_seed(seed: int, router: str) -> int:
    """fib_multipath_hash_seed of one router for a run seed: never 0 (0 asks the kernel for a
    random one), and different per router — with one seed everywhere, every tier hashes a
    flow identically, so the aggregation choice repeats the edge choice (hash polarization)
    and only k/2 of the (k/2)^2 core paths ever carry traffic."""
    return zlib.crc32(f"dblp-testbed:{seed}:{router}".encode()) or 1


def veth_pairs(topo: Topology) -> tuple[VethPair, ...]:
    return tuple(
        VethPair(lk.a, topo.intf(lk.a, lk.b), mac(i, 0), lk.b, topo.intf(lk.b, lk.a), mac(i, 1))
        for i, lk in enumerate(topo.links)
    )


def veth_commands(topo: Topology, pids: dict[str, int]) -> list[list[str]]:
    """`ip link add` lines creating each pair directly inside its two namespaces.

    The names never exist in the root namespace, so they cannot clash with anyone's there,
    and a crash cannot leave them behind: they die with the namespaces.
    """
    return [
        ["ip", "link", "add", "name", p.a_intf, "address", p.a_mac, "netns", str(pids[p.a]),
         "type", "veth", "peer", "name", p.b_intf, "address", p.b_mac, "netns", str(pids[p.b])]
        for p in veth_pairs(topo)
    ]  # fmt: skip


def node_plans(
    topo: Topology,
    seed: int = 0,
    tcp_rto_min_ms: float | None = None,
    have_hash_seed: bool = True,
    have_rto_sysctl: bool = True,
    have_netem: bool = False,
    mtu: int = 1500,
) -> dict[str, NodePlan]:
    """Every node's sysctls, addresses, neighbours, routes and shaping; every interface (hosts'
    and routers') gets `mtu`. Queue limits are taken as given (see `shaping.as_played`).

    A link with delay gets a netem leaf (same queue limit) instead of pfifo; without sch_netem
    that is an error naming the link, never a silently undelayed link.
    """
    delayed = [lk for lk in topo.links if lk.delay_ms > 0]
    if delayed and not have_netem:
        raise ValueError(
            f"link {delayed[0].name} has delay_ms={delayed[0].delay_ms:g}, which needs the "
            "kernel module sch_netem (absent here; see `testbed doctor`): set delay_ms = 0"
        )
    macs: dict[tuple[str, str], str] = {}
    for p in veth_pairs(topo):
        macs[(p.a, p.b)] = p.a_mac
        macs[(p.b, p.a)] = p.b_mac
    tables = routes(topo)
    plans: dict[str, NodePlan] = {}
    for node in topo.nodes:
        name = node.name
        peers = topo.neighbors(name)
        intfs = tuple(topo.intf(name, peer) for peer in peers)
        ip: list[tuple[str, ...]] = [("ip", "link", "set", "lo", "up")]
        sysctls: list[tuple[str, str]] = [
            ("net.ipv6.conf.all.disable_ipv6", "1"),
            ("net.ipv6.conf.default.disable_ipv6", "1"),
        ]
        for peer, intf in zip(peers, intfs, strict=True):
            addr, plen = topo.addr(name, peer)
            extra = ("noprefixroute",) if node.kind == "host" else ()
            ip.append(("ip", "addr", "add", f"{addr}/{plen}", "dev", intf, *extra))
            ip.append(("ip", "link", "set", intf, "mtu", str(mtu), "up"))
            peer_addr = topo.addr(peer, name)[0]
            ip.append(("ip", "neigh", "replace", peer_addr, "lladdr", macs[(peer, name)],
                       "dev", intf, "nud", "permanent"))  # fmt: skip
        if node.kind == "host":
            (peer,), (intf,) = peers, intfs
            rto = (
                ("rto_min", f"{tcp_rto_min_ms:g}ms")
                if tcp_rto_min_ms and not have_rto_sysctl
                else ()
            )
            ip.append(("ip", "route", "add", "default", "via", topo.gateway(name), "dev", intf,
                       "onlink", *rto))  # fmt: skip
            if tcp_rto_min_ms and have_rto_sysctl:
                sysctls.append(("net.ipv4.tcp_rto_min_us", str(round(tcp_rto_min_ms * 1000))))
        else:
            sysctls += [
                ("net.ipv4.ip_forward", "1"),
                ("net.ipv4.conf.all.rp_filter", "0"),
                ("net.ipv4.conf.default.rp_filter", "0"),
                *((f"net.ipv4.conf.{i}.rp_filter", "0") for i in intfs),
                ("net.ipv4.fib_multipath_hash_policy", "1"),
            ]
            if have_hash_seed:
                sysctls.append(("net.ipv4.fib_multipath_hash_seed", str(hash_seed(seed, name))))
            for rt in tables[name]:
                ip.append(_route_command(rt, topo, name))
        tc: list[tuple[str, ...]] = []
        for peer, intf in zip(peers, intfs, strict=True):
            lk = topo.link(name, peer)
            cmds = shape_commands(intf, lk.mbps, lk.queue)
            if lk.delay_ms > 0:
                cmds[-1] = leaf_command(intf, lk.queue, delay_ms=lk.delay_ms)
            tc += [tuple(c) for c in cmds]
        plans[name] = NodePlan(name, tuple(sysctls), tuple(ip), tuple(tc), intfs)
    return plans


def _route_command(rt, topo: Topology, router: str) -> tuple[str, ...]:
    if len(rt.nexthops) == 1:
        (nh,) = rt.nexthops
        if nh.via is None:
            src = topo.addr(router, nh.peer)[0]
            return ("ip", "route", "add", rt.dst, "dev", nh.dev, "src", src)
        return ("ip", "route", "add", rt.dst, "via", nh.via, "dev", nh.dev)
    hops: list[str] = []
    for nh in rt.nexthops:
        hops += ["nexthop", "via", str(nh.via), "dev", nh.dev]
    return ("ip", "route", "add", rt.dst, *hops)
