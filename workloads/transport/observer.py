"""The round boundary, for whoever must act on it (the testbed's round-aligned loss events):
an optional observer the all-reduce calls around each round, outside its timed part."""

from __future__ import annotations

from typing import Protocol

__all__ = ["RoundObserver"]


class RoundObserver(Protocol):
    """`begin(r)` before round r's timed part (it may block: the round waits for it), and
    again before each later call of the same round (a training step's next bucket: the
    observer acts on the first); `end(r)` once, after the round's last call."""

    def begin(self, r: int) -> None: ...

    def end(self, r: int) -> None: ...
