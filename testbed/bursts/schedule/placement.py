"""Which hosts run the workers: round-robin across pods."""

from __future__ import annotations

from testbed.bursts.schedule.events import ScheduleError

__all__ = ["DEFAULT_WORKERS", "place_server", "place_workers"]

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


def place_server(topo, n_workers: int) -> str:
    """The parameter server's host (`--collective ps`): the one a next worker would get, so it
    stands apart from the workers as they stand apart from each other (fattree k=4, 3 workers:
    h13, a pod of its own; 4 workers: h2)."""
    if n_workers + 1 > len(topo.hosts):
        raise ScheduleError(
            f"workers: {n_workers} workers and a parameter server need {n_workers + 1} hosts; "
            f"the topology has {len(topo.hosts)}"
        )
    return place_workers(topo, n_workers + 1)[-1]
