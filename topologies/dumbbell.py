"""Dumbbell: n hosts on each of two routers joined by one bottleneck link r_left-r_right.

Left hosts h1..hn are 10.0.0.(i+2), right hosts h(n+1)..h2n are 10.0.1.(i+2).
"""

from topologies.model import Link, Node, Topology, TopologyError


def dumbbell(
    n: int = 2, mbps: float = 100.0, queue: int = 50, bottleneck_mbps: float | None = None
) -> Topology:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 253:
        raise TopologyError(f"dumbbell: n must be in 1..253, got {n!r}")
    nodes = [Node("r_left", "router", "edge", 0), Node("r_right", "router", "edge", 1)]
    links: list[Link] = []
    addrs: list[tuple[str, str]] = []
    for side, router in enumerate(("r_left", "r_right")):
        for i in range(n):
            host = f"h{side * n + i + 1}"
            nodes.append(Node(host, "host", "host", side))
            links.append(Link(host, router, mbps, queue))
            addrs.append((host, f"10.0.{side}.{i + 2}"))
    links.append(Link("r_left", "r_right", bottleneck_mbps or mbps, queue))
    return Topology(
        name=f"dumbbell-{n}",
        nodes=tuple(nodes),
        links=tuple(links),
        host_addrs=tuple(addrs),
        params=(("n", n), ("mbps", mbps), ("queue", queue)),
    )
