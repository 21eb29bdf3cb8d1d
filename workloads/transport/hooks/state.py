"""What every hook's state shares: the step context the worker sets, the rows it drains, the
row shape, and a one-tensor bucket for the allreduce workload."""

from __future__ import annotations

import threading
from typing import Any

import torch


class TensorBucket:
    """A one-tensor stand-in for `dist.GradBucket`, so the allreduce workload (no model) runs
    exactly the hooks training runs."""

    __slots__ = ("_tensor", "_index", "_last")

    def __init__(self, tensor: torch.Tensor, index: int = 0, is_last: bool = True) -> None:
        self._tensor, self._index, self._last = tensor, index, is_last

    def buffer(self) -> torch.Tensor:
        return self._tensor

    def index(self) -> int:
        return self._index

    def is_last(self) -> bool:
        return self._last


class RowSink:
    """Rows produced on the transport / Gloo threads, drained on the training thread."""

    __slots__ = ("_rows", "_lock")

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, rows: list[dict[str, Any]]) -> None:
        with self._lock:
            self._rows.extend(rows)

    def drain(self) -> list[dict[str, Any]]:
        with self._lock:
            rows, self._rows = self._rows, []
        return rows


def row(**fields: Any) -> dict[str, Any]:
    """One `rounds` row (analysis/schema.py): the counters a stage row leaves at zero, then
    `fields`."""
    base = {
        "bytes": 0,
        "pkts_expected": 0,
        "pkts_received": 0,
        "delivered_loss": 0.0,
        "epsilon": 0.0,
        "nacks": 0,
        "retx_pkts": 0,
        "cap_hit": False,
        "bad_dgrams": 0,
        "loop_late_ms": float("nan"),
        "bytes_skipped": 0,
        "passes": 0,
        "pass_ms": float("nan"),
    }
    base.update(fields)
    return base


class Context:
    """What the worker tells the hooks before each step (read by the transport thread)."""

    __slots__ = ("step", "train_phase", "epsilon", "eps_id")

    def __init__(self) -> None:
        self.step, self.train_phase, self.epsilon, self.eps_id = 0, "critical", 0.0, 0


class HookState:
    """The part of a hook's state the worker talks to: the step context in, the rows out, and
    an optional round observer (transport/observer.py) told where each step's rounds begin
    and end (the step is the round it names)."""

    __slots__ = ("context", "sink", "observer")

    def __init__(self) -> None:
        self.context = Context()
        self.sink = RowSink()
        self.observer: Any = None

    def observe(self, observer: Any) -> None:
        """Tell `observer` (begin(step) / end(step)) of every step's rounds from now on."""
        self.observer = observer

    def set_context(self, step: int, train_phase: str, epsilon: float, eps_id: int) -> None:
        c = self.context
        c.step, c.train_phase, c.epsilon, c.eps_id = step, train_phase, epsilon, eps_id

    def drain_rows(self) -> list[dict[str, Any]]:
        return self.sink.drain()
