"""Al-Fares k-ary fat-tree (SIGCOMM 2008), every switch an L3 router.

k pods; per pod k/2 edge and k/2 aggregation routers; (k/2)^2 core routers. Aggregation
router j of every pod connects to cores r_c{j}_{0..k/2-1}. Hosts h1..h{k^3/4} are numbered pod
by pod, edge by edge; host i of edge e in pod p is 10.p.e.(i+2)/24 behind gateway 10.p.e.1.
`hosts_per_edge` > k/2 oversubscribes the edge uplinks.
"""

from topologies.model import Link, Node, Topology, TopologyError


def fattree(
    k: int = 4, mbps: float = 100.0, queue: int = 50, hosts_per_edge: int | None = None
) -> Topology:
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
        raise TopologyError(f"fattree: k must be an even integer >= 2, got {k!r}")
    if k > 254:
        raise TopologyError(f"fattree: k must be <= 254 (one octet per pod), got {k}")
    half = k // 2
    per_edge = half if hosts_per_edge is None else hosts_per_edge
    if isinstance(per_edge, bool) or not isinstance(per_edge, int) or not 1 <= per_edge <= 253:
        raise TopologyError(f"fattree: hosts_per_edge must be in 1..253, got {hosts_per_edge!r}")

    nodes: list[Node] = []
    host_links: list[Link] = []
    up_links: list[Link] = []
    core_links: list[Link] = []
    addrs: list[tuple[str, str]] = []
    hid = 0
    for p in range(k):
        for e in range(half):
            edge = f"r_e{p}_{e}"
            nodes.append(Node(edge, "router", "edge", p))
            for i in range(per_edge):
                hid += 1
                host = f"h{hid}"
                nodes.append(Node(host, "host", "host", p))
                host_links.append(Link(host, edge, mbps, queue))
                addrs.append((host, f"10.{p}.{e}.{i + 2}"))
            for a in range(half):
                up_links.append(Link(edge, f"r_a{p}_{a}", mbps, queue))
        for a in range(half):
            agg = f"r_a{p}_{a}"
            nodes.append(Node(agg, "router", "aggregation", p))
            for c in range(half):
                core_links.append(Link(agg, f"r_c{a}_{c}", mbps, queue))
    for a in range(half):
        for c in range(half):
            nodes.append(Node(f"r_c{a}_{c}", "router", "core", None))
    return Topology(
        name=f"fattree-k{k}",
        nodes=tuple(nodes),
        links=tuple(host_links + up_links + core_links),
        host_addrs=tuple(addrs),
        params=(("k", k), ("mbps", mbps), ("queue", queue), ("hosts_per_edge", per_edge)),
    )
