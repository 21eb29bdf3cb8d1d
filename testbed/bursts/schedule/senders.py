"""The idle hosts an incast sends from, and the rate each one sends at."""

from __future__ import annotations

from testbed.bursts.schedule.events import ScheduleError
from topologies.model import Direction

__all__ = ["SENDER_HEADROOM", "incast_senders", "paced_senders"]

#: A sender may fill this fraction of its own access link (its own queue must stay empty).
SENDER_HEADROOM = 0.95


def incast_senders(topo, dst: str, workers: list[str], n: int, sham: bool) -> list[tuple[str, str]]:
    """(sender, receiver) host pairs for an incast into ``dst``'s edge downlink.

    Senders are idle hosts (no worker) outside dst's pod (where the topology has several pods),
    hosts behind other edge routers and first hosts of worker-free edges first; hosts behind
    dst's own edge router (a star) come last. Each sender's own access link stays below its rate,
    so the burst converges at the target's shallow queue. With ``sham`` every sender sends instead
    to an idle host behind its own edge router: same senders, same rates, no worker link crossed.
    """
    busy = set(workers) | {dst}
    dst_edge = topo.access_router(dst)
    by_edge: dict[str, list[str]] = {}
    for h in topo.hosts:
        by_edge.setdefault(topo.access_router(h.name), []).append(h.name)
    several_pods = len({h.pod for h in topo.hosts}) > 1
    candidates = []
    for order, (edge, hosts) in enumerate(by_edge.items()):
        if several_pods and topo.node(edge).pod == topo.node(dst).pod:
            continue
        edge_busy = any(h in busy for h in hosts)
        idle = [h for h in hosts if h not in busy]
        for rank, h in enumerate(idle):
            candidates.append((edge == dst_edge, edge_busy, rank, order, h))
    picked = [c[-1] for c in sorted(candidates)[:n]]
    if len(picked) < n:
        raise ScheduleError(
            f"senders: incast into {dst} needs {n} idle hosts outside its pod/edge; "
            f"the topology has {len(picked)}"
        )
    if not sham:
        return [(s, dst) for s in picked]
    pairs = []
    for s in picked:
        mates = [h for h in by_edge[topo.access_router(s)] if h != s and h not in busy]
        if not mates:
            raise ScheduleError(f"sham: sender {s} has no idle neighbour behind its edge router")
        pairs.append((s, mates[0]))
    return pairs


def paced_senders(
    topo, into: Direction, workers: list[str], magnitude: float, n: int, sham: bool
) -> tuple[list[tuple[str, str]], float]:
    """The pairs of an incast of ``magnitude`` x the rate of ``into``, and each sender's Mbit/s.

    Raises when a sender's share would exceed `SENDER_HEADROOM` of its own access link.
    """
    per_sender = magnitude * topo.link(into.src, into.dst).mbps / n
    pairs = incast_senders(topo, into.dst, workers, n, sham)
    for s, _ in pairs:
        own = topo.link(s, topo.access_router(s)).mbps
        if per_sender > SENDER_HEADROOM * own:
            raise ScheduleError(
                f"senders: {n} senders x {per_sender:.0f} Mbit/s exceed "
                f"{SENDER_HEADROOM:.0%} of {s}'s {own:.0f} Mbit/s link; add senders"
            )
    return pairs, per_sender
