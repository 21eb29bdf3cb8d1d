"""Seeded burst schedules: preset + topology + worker hosts + duration -> events (pure).

Same seed, same events, for every transport. Each stream draws from its own generator seeded
by (seed, stream index), so two presets with the same stream structure (heavy and sham) get the
same windows. Event ids number bursts in time order; one burst hitting several link directions
gives one Event per direction, all sharing the burst's id (one `bursts` row each).

Composition of overlapping events on one link direction (``timeline``) is per kind:
loss -> the highest probability wins (its mode with it); squeeze -> the smallest fraction wins;
delay -> the largest delay wins; incast -> the largest load wins (its senders with it). Every event
boundary is a change point (so every event gets an applied time, even when another event
dominates); the base (no impairment) is restored only when no event of that kind remains.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from testbed.presets import Preset, Stream, Target

__all__ = [
    "Change",
    "Event",
    "ScheduleError",
    "gilbert_elliott_steps",
    "generate",
    "incast_senders",
    "place_workers",
    "resolve_targets",
    "timeline",
]

DEFAULT_WORKERS = 4
#: A sender may fill this fraction of its own access link (its own queue must stay empty).
SENDER_HEADROOM = 0.95


class ScheduleError(ValueError):
    """A preset that cannot be laid onto this topology; names the target or field."""


@dataclass(frozen=True)
class Event:
    """One burst on one link direction. Times are seconds after t0 (the external start signal)."""

    event_id: int
    link: str  # "a-b", a the end nearer the hosts
    direction: str  # "x->y": the egress of node x towards y is impaired
    kind: str
    magnitude: float
    params: dict[str, Any] = field(compare=True, hash=False)
    planned_start_s: float = 0.0
    planned_end_s: float = 0.0

    @property
    def egress(self) -> tuple[str, str]:
        node, peer = self.direction.split("->")
        return node, peer

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "link": self.link,
            "direction": self.direction,
            "kind": self.kind,
            "magnitude": self.magnitude,
            "params": self.params,
            "planned_start_s": self.planned_start_s,
            "planned_end_s": self.planned_end_s,
        }


@dataclass(frozen=True)
class Change:
    """A set-point change of one kind on one link direction at ``t_s`` (seconds after t0).

    ``value`` is the composed magnitude now in force (None: base restored); ``event`` the event
    that supplies it (for its mode / senders); ``starts``/``ends`` the event ids whose planned
    boundary this change is.
    """

    t_s: float
    direction: str
    kind: str
    value: float | None
    event: Event | None
    starts: tuple[int, ...] = ()
    ends: tuple[int, ...] = ()


# ---- placement and link roles ---------------------------------------------------------------


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


def _access_link(topo, host: str):
    for link in topo.links:
        if host in (link.a, link.b):
            return link
    raise ScheduleError(f"host {host} has no link")


def _edge_of(topo, host: str) -> str:
    link = _access_link(topo, host)
    return link.b if link.a == host else link.a


def resolve_targets(topo, target: Target, workers: list[str]) -> list[tuple[str, str]]:
    """(link name, direction "x->y") pairs a target role names on this topology."""
    if target.role in ("worker_downlink", "worker_uplink"):
        if target.worker >= len(workers):
            raise ScheduleError(
                f"targets: worker {target.worker} but only {len(workers)} worker hosts {workers}"
            )
        host = workers[target.worker]
        link = _access_link(topo, host)
        edge = _edge_of(topo, host)
        d = f"{edge}->{host}" if target.role == "worker_downlink" else f"{host}->{edge}"
        return [(link.name, d)]
    if target.role == "link":
        names = {lk.name: lk for lk in topo.links}
        if target.link not in names:
            raise ScheduleError(f"targets: no link {target.link!r} in topology {topo.name}")
        lk = names[target.link]
        d = f"{lk.a}->{lk.b}" if target.direction == "up" else f"{lk.b}->{lk.a}"
        return [(lk.name, d)]
    out = []
    for lk in topo.links:
        lower = topo.node(lk.a)
        if lower.tier != target.tier or (target.pod is not None and lower.pod != target.pod):
            continue
        if topo.node(lk.b).tier == lower.tier:
            continue
        d = f"{lk.a}->{lk.b}" if target.role == "tier_uplinks" else f"{lk.b}->{lk.a}"
        out.append((lk.name, d))
    if not out:
        where = f" in pod {target.pod}" if target.pod is not None else ""
        raise ScheduleError(f"targets: no {target.tier} links{where} in topology {topo.name}")
    return out


def incast_senders(topo, dst: str, workers: list[str], n: int, sham: bool) -> list[tuple[str, str]]:
    """(sender, receiver) host pairs for an incast into ``dst``'s edge downlink.

    Senders are idle hosts (no worker) outside dst's pod (where the topology has several pods),
    hosts behind other edge routers and first hosts of worker-free edges first; hosts behind
    dst's own edge router (a star) come last. Each sender's own access link stays below its rate,
    so the burst converges at the target's shallow queue. With ``sham`` every sender sends instead
    to an idle host behind its own edge router: same senders, same rates, no worker link crossed.
    """
    busy = set(workers) | {dst}
    dst_node = topo.node(dst)
    dst_edge = _edge_of(topo, dst)
    by_edge: dict[str, list[str]] = {}
    for h in topo.hosts:
        by_edge.setdefault(_edge_of(topo, h.name), []).append(h.name)
    several_pods = len({h.pod for h in topo.hosts}) > 1
    candidates = []
    for order, (edge, hosts) in enumerate(by_edge.items()):
        if several_pods and topo.node(edge).pod == dst_node.pod:
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
        mates = [h for h in by_edge[_edge_of(topo, s)] if h != s and h not in busy]
        if not mates:
            raise ScheduleError(f"sham: sender {s} has no idle neighbour behind its edge router")
        pairs.append((s, mates[0]))
    return pairs


# ---- arrival processes ----------------------------------------------------------------------


def _burst_starts(stream: Stream, rng: random.Random, duration_s: float) -> list[float]:
    """Burst start times: the first one gap after ``start_s``, so streams do not all fire at t0."""
    arr = stream.arrival

    def gap() -> float:
        extra = rng.expovariate(1.0 / arr.mean_extra_gap_s) if arr.mean_extra_gap_s > 0 else 0.0
        return arr.min_gap_s + extra

    out = []
    t = arr.start_s + gap()
    while t < duration_s:
        out.append(t)
        t += gap()
    return out


def gilbert_elliott_steps(
    rng: random.Random,
    start_s: float,
    end_s: float,
    p_good_to_bad: float,
    p_bad_to_good: float,
    loss_good: float,
    loss_bad: float,
    step_s: float,
) -> list[tuple[float, float]]:
    """(time, loss probability) at each state flip of a two-state Markov chain, from start_s.

    The initial state is drawn from the stationary distribution P(bad) = g / (g + b), so the
    fraction of time spent bad matches it from the first step.
    """
    bad = rng.random() < p_good_to_bad / (p_good_to_bad + p_bad_to_good)
    steps = [(start_s, loss_bad if bad else loss_good)]
    n = int(round((end_s - start_s) / step_s))
    for i in range(1, n):
        flip = rng.random() < (p_bad_to_good if bad else p_good_to_bad)
        if flip:
            bad = not bad
            steps.append((start_s + i * step_s, loss_bad if bad else loss_good))
    return steps


# ---- generation -----------------------------------------------------------------------------


def generate(preset: Preset, topo, workers: list[str], duration_s: float, seed: int) -> list[Event]:
    """Every event of the preset on this topology, for [0, duration_s) after t0.

    Without worker hosts (probe workloads) roles resolve against the default placement of
    ``DEFAULT_WORKERS`` workers, so a probe crosses the links a training run would see hit.
    """
    workers = list(workers) or place_workers(topo, min(DEFAULT_WORKERS, len(topo.hosts)))
    bursts: list[tuple[float, int, Stream, random.Random]] = []
    for i, stream in enumerate(preset.streams):
        rng = random.Random(f"{seed}/{i}")
        bursts.extend((t, i, stream, rng) for t in _burst_starts(stream, rng, duration_s))
    bursts.sort(key=lambda b: (b[0], b[1]))
    targets = [
        [pair for t in s.targets for pair in resolve_targets(topo, t, workers)]
        for s in preset.streams
    ]
    events: list[Event] = []
    for event_id, (start, i, stream, rng) in enumerate(bursts):
        extra: dict[str, Any] = {}
        if stream.mode == "gilbert":
            # one chain per burst, shared by all its link directions
            g = stream.gilbert
            end = start + stream.duration_s
            extra["steps"] = gilbert_elliott_steps(
                rng, start, end, g.p_good_to_bad, g.p_bad_to_good, g.loss_good,
                stream.magnitude, g.step_s,
            )  # fmt: skip
        for link, direction in targets[i]:
            events.extend(
                _events_for(topo, workers, stream, event_id, link, direction, start, extra)
            )
    return events


def _events_for(
    topo, workers, stream: Stream, event_id, link, direction, start, extra
) -> list[Event]:
    end = start + stream.duration_s
    base = {"kind": stream.kind, "planned_start_s": start, "planned_end_s": end}
    if stream.kind == "loss":
        params = {"mode": stream.mode, **extra}
        return [Event(event_id, link, direction, magnitude=stream.magnitude, params=params, **base)]
    if stream.kind != "incast":
        return [Event(event_id, link, direction, magnitude=stream.magnitude, params={}, **base)]
    edge, dst = direction.split("->")
    dst_mbps = topo.link(edge, dst).mbps
    per_sender = stream.magnitude * dst_mbps / stream.senders
    pairs = incast_senders(topo, dst, workers, stream.senders, stream.sham)
    for s, _ in pairs:
        own = _access_link(topo, s).mbps
        if per_sender > SENDER_HEADROOM * own:
            raise ScheduleError(
                f"senders: {stream.senders} senders x {per_sender:.0f} Mbit/s exceed "
                f"{SENDER_HEADROOM:.0%} of {s}'s {own:.0f} Mbit/s link; add senders"
            )
    if not stream.sham:
        params = {"pairs": pairs, "mbps_per_sender": per_sender, "sham": False}
        return [Event(event_id, link, direction, magnitude=stream.magnitude, params=params, **base)]
    out = []
    for s, d in pairs:
        mate_edge = _edge_of(topo, d)
        params = {"pairs": [(s, d)], "mbps_per_sender": per_sender, "sham": True}
        out.append(
            Event(
                event_id,
                _access_link(topo, d).name,
                f"{mate_edge}->{d}",
                magnitude=stream.magnitude,
                params=params,
                **base,
            )
        )
    return out


# ---- composition ----------------------------------------------------------------------------

_PICK = {"loss": max, "squeeze": min, "delay": max, "incast": max}


def _pieces(e: Event) -> list[tuple[float, float, float]]:
    """(start, end, value) pieces of an event's set-point (a Gilbert–Elliott event has many)."""
    steps = e.params.get("steps")
    if not steps:
        return [(e.planned_start_s, e.planned_end_s, e.magnitude)]
    times = [t for t, _ in steps] + [e.planned_end_s]
    return [(times[j], times[j + 1], steps[j][1]) for j in range(len(steps))]


def timeline(events: list[Event]) -> list[Change]:
    """Set-point changes per (direction, kind), composed as the module docstring says."""
    groups: dict[tuple[str, str], list[Event]] = {}
    for e in events:
        groups.setdefault((e.direction, e.kind), []).append(e)
    out: list[Change] = []
    for (direction, kind), evs in groups.items():
        pick = _PICK[kind]
        pieces = [(s, t, v, e) for e in evs for (s, t, v) in _pieces(e)]
        points = sorted({p for s, t, _, _ in pieces for p in (s, t)})
        starts = {}
        ends = {}
        for e in evs:
            starts.setdefault(e.planned_start_s, []).append(e.event_id)
            ends.setdefault(e.planned_end_s, []).append(e.event_id)
        last: tuple[float | None, Event | None] = (None, None)
        for p in points:
            active = [(v, e) for s, t, v, e in pieces if s <= p < t]
            if active:
                best = pick(v for v, _ in active)
                winner = next(e for v, e in active if v == best)
                now: tuple[float | None, Event | None] = (best, winner)
            else:
                now = (None, None)
            st, en = tuple(starts.get(p, ())), tuple(ends.get(p, ()))
            if now != last or st or en:
                out.append(Change(p, direction, kind, now[0], now[1], st, en))
                last = now
    out.sort(key=lambda c: (c.t_s, c.direction, c.kind))
    return out
