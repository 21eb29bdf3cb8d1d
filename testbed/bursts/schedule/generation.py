"""`generate`: every event of a preset on a topology, seeded.

Each stream draws from its own generator seeded by (seed, stream index), so two presets with
the same stream structure (heavy and sham) get the same windows. A round-aligned preset's events
hit seeded rounds of the run instead of time windows (`rounds.hit_rounds`).
"""

from __future__ import annotations

import math
import random
from typing import Any

from testbed.bursts.presets import Preset, Stream
from testbed.bursts.schedule.arrivals import burst_starts, gilbert_elliott_steps
from testbed.bursts.schedule.events import Event, ScheduleError
from testbed.bursts.schedule.placement import DEFAULT_WORKERS, place_workers
from testbed.bursts.schedule.rounds import hit_rounds
from testbed.bursts.schedule.senders import paced_senders
from testbed.bursts.schedule.targets import resolve_targets
from topologies.model import Direction

__all__ = ["generate"]


def generate(
    preset: Preset,
    topo,
    workers: list[str],
    duration_s: float,
    seed: int,
    rounds: int | None = None,
    control_ports: tuple[int, int] | None = None,
) -> list[Event]:
    """Every event of the preset on this topology, for [0, duration_s) after t0, or, for a
    round-aligned preset, on the seeded rounds of a run of ``rounds`` rounds; a stream with
    ``spare_control`` carries ``control_ports`` (the transports' TCP port range, inclusive) in
    its events' params, for the loss rules to spare.

    Without worker hosts (probe workloads) roles resolve against the default placement of
    ``DEFAULT_WORKERS`` workers, so a probe crosses the links a training run would see hit.
    """
    workers = list(workers) or place_workers(topo, min(DEFAULT_WORKERS, len(topo.hosts)))
    if preset.round_aligned:
        if rounds is None:
            raise ScheduleError(f"rounds: {preset.name} hits rounds; the run's count is unknown")
        return _round_events(preset, topo, workers, rounds, seed, control_ports)
    bursts: list[tuple[float, int, Stream, random.Random]] = []
    for i, stream in enumerate(preset.streams):
        rng = random.Random(f"{seed}/{i}")
        bursts.extend((t, i, stream, rng) for t in burst_starts(stream, rng, duration_s))
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
    topo, workers, stream: Stream, event_id, link, direction: Direction, start, extra
) -> list[Event]:
    end = start + stream.duration_s
    base = {"kind": stream.kind, "planned_start_s": start, "planned_end_s": end}
    if stream.kind == "loss":
        params = {"mode": stream.mode, **extra}
        return [Event(event_id, link, direction, magnitude=stream.magnitude, params=params, **base)]
    if stream.kind != "incast":
        return [Event(event_id, link, direction, magnitude=stream.magnitude, params={}, **base)]
    pairs, per_sender = paced_senders(
        topo, direction, workers, stream.magnitude, stream.senders, stream.sham
    )
    if not stream.sham:
        params = {"pairs": pairs, "mbps_per_sender": per_sender, "sham": False}
        return [Event(event_id, link, direction, magnitude=stream.magnitude, params=params, **base)]
    out = []
    for s, d in pairs:
        edge = topo.access_router(d)
        params = {"pairs": [(s, d)], "mbps_per_sender": per_sender, "sham": True}
        out.append(
            Event(
                event_id,
                topo.link(d, edge).name,
                Direction(edge, d),
                magnitude=stream.magnitude,
                params=params,
                **base,
            )
        )
    return out


def _params(stream, control_ports: tuple[int, int] | None) -> dict:
    """A round event's parameters: its loss mode, and the TCP port range its rules spare."""
    if stream.spare_control and control_ports is not None:
        return {"mode": stream.mode, "spare_tcp": list(control_ports)}
    return {"mode": stream.mode}


def _round_events(
    preset: Preset,
    topo,
    workers: list[str],
    total: int,
    seed: int,
    control_ports: tuple[int, int] | None = None,
) -> list[Event]:
    """One event per (hit round, target), ids in round order; no planned times (NaN)."""
    hits = []
    for i, stream in enumerate(preset.streams):
        rng = random.Random(f"{seed}/{i}")
        hits.extend((r, i, stream) for r in hit_rounds(stream.rounds, rng, total))
    hits.sort(key=lambda h: (h[0], h[1]))
    events = []
    for event_id, (r, _, stream) in enumerate(hits):
        for t in stream.targets:
            for link, direction in resolve_targets(topo, t, workers):
                events.append(
                    Event(
                        event_id,
                        link,
                        direction,
                        stream.kind,
                        stream.magnitude,
                        _params(stream, control_ports),
                        math.nan,
                        math.nan,
                        round=r,
                    )  # fmt: skip
                )
    return events
