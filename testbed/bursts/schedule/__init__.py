"""Seeded burst schedules: preset + topology + worker hosts + duration -> events (pure).

Same seed, same events, for every transport. One module per job:

- ``events``: what a schedule is made of (`Event`, `Change`) and `ScheduleError`;
- ``placement``: which hosts run the workers;
- ``targets``: the link directions a preset's target roles name on a topology;
- ``senders``: the idle hosts an incast sends from, and each one's rate;
- ``arrivals``: when bursts start, and the Gilbert–Elliott loss chain within one;
- ``rounds``: which rounds a round-aligned stream hits;
- ``generation``: `generate`, the preset's streams laid onto the topology as events;
- ``composition``: `timeline`, overlapping events of one link direction composed into
  set-point changes (what the scheduler plays).
"""

from testbed.bursts.schedule.arrivals import gilbert_elliott_steps
from testbed.bursts.schedule.composition import timeline
from testbed.bursts.schedule.events import Change, Event, ScheduleError
from testbed.bursts.schedule.generation import generate
from testbed.bursts.schedule.placement import DEFAULT_WORKERS, place_server, place_workers
from testbed.bursts.schedule.rounds import hit_rounds
from testbed.bursts.schedule.senders import incast_senders
from testbed.bursts.schedule.targets import resolve_targets

__all__ = [
    "DEFAULT_WORKERS",
    "Change",
    "Event",
    "ScheduleError",
    "gilbert_elliott_steps",
    "generate",
    "hit_rounds",
    "incast_senders",
    "place_server",
    "place_workers",
    "resolve_targets",
    "timeline",
]
