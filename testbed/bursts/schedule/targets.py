"""The link directions a preset's target roles name on a topology, given its worker hosts."""

from __future__ import annotations

from testbed.bursts.presets import Target
from testbed.bursts.schedule.events import ScheduleError
from topologies.model import Direction

__all__ = ["resolve_targets"]


def resolve_targets(topo, target: Target, workers: list[str]) -> list[tuple[str, Direction]]:
    """(link name, direction) pairs a target role names on this topology. `workers` are the
    receiving hosts in order: the workers, then a parameter server's host if there is one."""
    if target.role == "all_worker_downlinks":
        out = []
        for host in workers:
            edge = topo.access_router(host)
            out.append((topo.link(host, edge).name, Direction(edge, host)))
        return out
    if target.role in ("worker_downlink", "worker_uplink"):
        if target.worker >= len(workers):
            raise ScheduleError(
                f"targets: worker {target.worker} but only {len(workers)} worker hosts {workers}"
            )
        host = workers[target.worker]
        edge = topo.access_router(host)
        d = Direction(edge, host) if target.role == "worker_downlink" else Direction(host, edge)
        return [(topo.link(host, edge).name, d)]
    if target.role == "link":
        names = {lk.name: lk for lk in topo.links}
        if target.link not in names:
            raise ScheduleError(f"targets: no link {target.link!r} in topology {topo.name}")
        lk = names[target.link]
        return [(lk.name, lk.up if target.direction == "up" else lk.down)]
    out = []
    for lk in topo.links:
        lower = topo.node(lk.a)
        if lower.tier != target.tier or (target.pod is not None and lower.pod != target.pod):
            continue
        if topo.node(lk.b).tier == lower.tier:
            continue
        out.append((lk.name, lk.up if target.role == "tier_uplinks" else lk.down))
    if not out:
        where = f" in pod {target.pod}" if target.pod is not None else ""
        raise ScheduleError(f"targets: no {target.tier} links{where} in topology {topo.name}")
    return out
