"""What a schedule is made of: events (one burst on one link direction) and set-point changes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topologies.model import Direction

__all__ = ["Change", "Event", "ScheduleError"]


class ScheduleError(ValueError):
    """A preset that cannot be laid onto this topology; names the target or field."""


@dataclass(frozen=True)
class Event:
    """One burst on one link direction. Times are seconds after t0 (the external start signal).

    Event ids number bursts in time order; one burst hitting several link directions gives one
    Event per direction, all sharing the burst's id (one `bursts` row each). A round-aligned
    event has its ``round`` instead of planned times (NaN): it is on while that round runs.
    """

    event_id: int
    link: str  # "a-b", a the end nearer the hosts
    direction: Direction  # the egress of direction.src towards direction.dst is impaired
    kind: str
    magnitude: float
    params: dict[str, Any] = field(compare=True, hash=False)
    planned_start_s: float = 0.0
    planned_end_s: float = 0.0
    round: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "event_id": self.event_id,
            "link": self.link,
            "direction": str(self.direction),
            "kind": self.kind,
            "magnitude": self.magnitude,
            "params": self.params,
        }
        if self.round is not None:  # a round instead of planned times (JSON has no NaN)
            return out | {"round": self.round}
        return out | {"planned_start_s": self.planned_start_s, "planned_end_s": self.planned_end_s}


@dataclass(frozen=True)
class Change:
    """A set-point change of one kind on one link direction at ``t_s`` (seconds after t0).

    ``value`` is the composed magnitude now in force (None: base restored); ``event`` the event
    that supplies it (for its mode / senders); ``starts``/``ends`` the event ids whose planned
    boundary this change is.
    """

    t_s: float
    direction: Direction
    kind: str
    value: float | None
    event: Event | None
    starts: tuple[int, ...] = ()
    ends: tuple[int, ...] = ()
