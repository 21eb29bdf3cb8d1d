"""A topology drawn as a layered graph: one row per tier, hosts at the bottom (matplotlib)."""

from __future__ import annotations

from pathlib import Path

from topologies import Topology

ROWS = ("core", "spine", "aggregation", "edge", "leaf", "host")


def draw(topo: Topology, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tiers = [r for r in ROWS if any(n.tier == r for n in topo.nodes)]
    pos: dict[str, tuple[float, float]] = {}
    widest = max(sum(1 for n in topo.nodes if n.tier == r) for r in tiers)
    for row, tier in enumerate(tiers):
        members = [n.name for n in topo.nodes if n.tier == tier]
        for i, name in enumerate(members):
            pos[name] = ((i + 0.5) * widest / len(members), len(tiers) - 1 - row)
    fig, ax = plt.subplots(figsize=(max(6.0, widest * 0.45), 1.3 * len(tiers) + 1))
    for lk in topo.links:
        (xa, ya), (xb, yb) = pos[lk.a], pos[lk.b]
        ax.plot([xa, xb], [ya, yb], color="0.6", linewidth=0.6, zorder=1)
    small = len(topo.nodes) <= 60
    for node in topo.nodes:
        x, y = pos[node.name]
        host = node.kind == "host"
        ax.scatter([x], [y], s=40 if host else 90, marker="o" if host else "s",
                   color="tab:blue" if host else "tab:orange", zorder=2)  # fmt: skip
        if small:
            ax.annotate(node.name, (x, y), textcoords="offset points", xytext=(0, -12 if host
                        else 8), ha="center", fontsize=6)  # fmt: skip
    ax.set_yticks(range(len(tiers)), list(reversed(tiers)))
    ax.set_xticks([])
    ax.set_title(f"{topo.name}: {len(topo.hosts)} hosts, {len(topo.routers)} routers")
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
