"""Star: n hosts h1..hn on one router r_0, addresses 10.0.0.(i+2) (incast labs)."""

from topologies.model import Link, Node, Topology, TopologyError


def star(n: int = 4, mbps: float = 100.0, queue: int = 50) -> Topology:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 253:
        raise TopologyError(f"star: n must be in 1..253, got {n!r}")
    hosts = [Node(f"h{i + 1}", "host", "host", 0) for i in range(n)]
    return Topology(
        name=f"star-{n}",
        nodes=(Node("r_0", "router", "edge", 0), *hosts),
        links=tuple(Link(h.name, "r_0", mbps, queue) for h in hosts),
        host_addrs=tuple((h.name, f"10.0.0.{i + 2}") for i, h in enumerate(hosts)),
        params=(("n", n), ("mbps", mbps), ("queue", queue)),
    )
