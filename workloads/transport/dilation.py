"""Time dilation D (DieCast, NSDI'07), the one place where emulated and played time meet.

Under dilation D the emulated network runs D times slower on the machine: what the spec says
and the tables hold is emulated; what the kernel, the clocks and the sleeps see is played.
A played duration is D x the emulated one, a played rate the emulated one / D, and a played
clock runs from the same anchor t0 D x slower. Every module that converts between the two
calls `TimeDilation` (a unit test checks that none scales by D by hand), and every field that
holds D reuses `LIMITS`. It lives in the transport, which must stay standalone, so that the
worker and the testbed (which may import workloads) share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: D's range: 1 (no dilation) to 1000, in pydantic's ge/le names.
LIMITS = {"ge": 1, "le": 1000}
#: How a value moves under D (a transport knob's `dilate`): a duration is played D x longer, a
#: rate D x slower; anything else stays.
DURATION, RATE = "duration", "rate"


@dataclass(frozen=True)
class TimeDilation:
    """The run's D; its methods take and return durations (any unit), rates (any unit) and
    clock times (seconds, any clock), so they work on floats and pandas columns alike."""

    d: float = 1.0

    def __post_init__(self) -> None:
        if not LIMITS["ge"] <= self.d <= LIMITS["le"]:
            raise ValueError(
                f"dilation must be >= {LIMITS['ge']} and <= {LIMITS['le']}, got {self.d}"
            )

    def played(self, duration: Any) -> Any:
        """An emulated duration as played: D x it."""
        return duration * self.d

    def emulated(self, duration: Any) -> Any:
        """A played duration in emulated time: it / D."""
        return duration / self.d

    def played_rate(self, rate: Any) -> Any:
        """An emulated rate as played: it / D."""
        return rate / self.d

    def emulated_rate(self, rate: Any) -> Any:
        """A played (measured) rate in emulated terms: D x it."""
        return rate * self.d

    def deadline(self, t0: float, t: Any) -> Any:
        """The played clock time of emulated time `t` after the anchor `t0`: t0 + D t."""
        return t0 + t * self.d

    def since(self, t0: float, now: Any) -> Any:
        """The emulated time since the anchor `t0` at played clock time `now`: (now - t0) / D."""
        return (now - t0) / self.d

    def emulated_clock(self, t0: float, t: Any) -> Any:
        """A played clock time as emulated, around the anchor `t0`: t0 + (t - t0) / D."""
        return t0 + (t - t0) / self.d

    def stretch(self, duration: Any) -> Any:
        """What to add to a duration the machine ran at full speed so it lasts D x as long:
        (D - 1) x it (the worker's compute, which the machine does not slow down itself)."""
        return (self.d - 1) * duration

    def played_as(self, kind: str | None, value: Any) -> Any:
        """An emulated `value` of `kind` (DURATION, RATE or None) as played."""
        if kind == DURATION:
            return self.played(value)
        if kind == RATE:
            return self.played_rate(value)
        return value
