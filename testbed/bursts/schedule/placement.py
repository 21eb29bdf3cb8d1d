"""Which hosts run the workers: round-robin across pods."""

from __future__ import annotations

from testbed.bursts.schedule.events import ScheduleError

__all__ = ["DEFAULT_WORKERS", "place_workers"]

#: Workers a schedule's roles resolve against when the workload has none (probes).
DEFAULT_WORKERS = 4


def place_workers(topo, n: int) -> list[str]:
    """n worker hosts round-robin across pods (fattree k=4, n=4: h1, h5, h9, h13).

    Hosts without a pod (dumbbell, star, leaf-spine) form one group, taken in order.
    """
    if n > len(topo.hosts):
        raise ScheduleError(f"workers: {n} workers but the topology has {len(topo.hosts)} hosts")
    pods: dict[object, list[str]] = {}
    for h in topo.hosts:
        pods.setdefault(h.pod, []).append(h.name)
    groups = list(pods.values())
    out: list[str] = []
    i = 0
    while len(out) < n:
        group = groups[i % len(groups)]
        idx = i // len(groups)
        if idx < len(group):
            out.append(group[idx])
        i += 1
    return out
