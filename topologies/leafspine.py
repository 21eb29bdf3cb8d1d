"""Two-tier leaf-spine: every leaf connects to every spine; hosts hang off leaves.

Host i of leaf l is 10.0.l.(i+2)/24 behind gateway 10.0.l.1; a leaf is its hosts' "pod".
"""

from topologies.model import Link, Node, Topology, TopologyError


def leafspine(
    leaves: int = 4, spines: int = 2, hosts_per_leaf: int = 2, mbps: float = 100.0, queue: int = 50
) -> Topology:
    for what, v, hi in (("leaves", leaves, 256), ("spines", spines, 256)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
            raise TopologyError(f"leafspine: {what} must be in 1..{hi}, got {v!r}")
    hpl = hosts_per_leaf
    if isinstance(hpl, bool) or not isinstance(hpl, int) or not 1 <= hpl <= 253:
        raise TopologyError(f"leafspine: hosts_per_leaf must be in 1..253, got {hpl!r}")
    nodes: list[Node] = []
    host_links: list[Link] = []
    up_links: list[Link] = []
    addrs: list[tuple[str, str]] = []
    hid = 0
    for lf in range(leaves):
        leaf = f"r_l{lf}"
        nodes.append(Node(leaf, "router", "leaf", lf))
        for i in range(hpl):
            hid += 1
            nodes.append(Node(f"h{hid}", "host", "host", lf))
            host_links.append(Link(f"h{hid}", leaf, mbps, queue))
            addrs.append((f"h{hid}", f"10.0.{lf}.{i + 2}"))
        up_links.extend(Link(leaf, f"r_s{s}", mbps, queue) for s in range(spines))
    nodes.extend(Node(f"r_s{s}", "router", "spine", None) for s in range(spines))
    return Topology(
        name=f"leafspine-{leaves}x{spines}",
        nodes=tuple(nodes),
        links=tuple(host_links + up_links),
        host_addrs=tuple(addrs),
        params=(("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hpl)),
    )
