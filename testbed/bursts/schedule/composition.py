"""`timeline`: the events of each link direction composed into set-point changes.

Composition of overlapping events on one link direction is per kind: loss -> the highest
probability wins (its mode with it); squeeze -> the smallest fraction wins; delay -> the largest
delay wins; incast -> the largest load wins (its senders with it). Every event boundary is a
change point (so every event gets an applied time, even when another event dominates); the base
(no impairment) is restored only when no event of that kind remains.
"""

from __future__ import annotations

from testbed.bursts.schedule.events import Change, Event
from topologies.model import Direction

__all__ = ["timeline"]

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
    groups: dict[tuple[Direction, str], list[Event]] = {}
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
