"""Per-step arithmetic of a worker: the learning-rate schedule, how much of a step was
communication, its delivered loss, and the compute stretch under time dilation."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from workloads.transport.dilation import TimeDilation

LR_DECAY = 0.1
#: LR decays at these fractions of the run (rounded down to a phase checkpoint).
LR_DECAY_AT = (0.5, 0.75)


def stretch_compute(step_ms: float, comm_ms: float, dilation: float) -> float:
    """Under time dilation D the network is D x slower, so the compute must be too, or the
    compute/communication ratio is not the emulated one: sleep (D - 1) x the step's compute
    (its time minus its communication). Returns the ms slept."""
    extra_ms = TimeDilation(dilation).stretch(max(0.0, step_ms - comm_ms))
    if extra_ms > 0:
        time.sleep(extra_ms / 1e3)
    return extra_ms


def lr_milestones(total_steps: int, every: int) -> tuple[int, ...]:
    """Decay steps at LR_DECAY_AT of the run, on checkpoint boundaries (so ε can follow)."""
    out = []
    for frac in LR_DECAY_AT:
        m = max(every, int(frac * total_steps) // every * every)
        if m < total_steps and m not in out:
            out.append(m)
    return tuple(out)


def lr_at(base: float, step: int, milestones: tuple[int, ...]) -> float:
    return base * LR_DECAY ** sum(step >= m for m in milestones)


def busy_ms(rows: list[dict[str, Any]], lo: float, hi: float) -> float:
    """Length of the union of the `total` rounds' intervals inside [lo, hi], in ms."""
    spans = sorted(
        (max(lo, r["t_start_s"]), min(hi, r["t_end_s"])) for r in rows if r["stage"] == "total"
    )
    total, end = 0.0, -math.inf
    for a, b in spans:
        if b <= a:
            continue
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total * 1e3


def step_loss(rows: list[dict[str, Any]]) -> float:
    """Delivered loss over the step's rounds, weighted by their expected packets."""
    tot = [r for r in rows if r["stage"] == "total"]
    expected = sum(r["pkts_expected"] for r in tot)
    if not expected:
        return 0.0
    return sum(r["delivered_loss"] * r["pkts_expected"] for r in tot) / expected


def round_ms(rows: list[dict[str, Any]]) -> float:
    """The step's slowest round (0 without one): the progress line's round time."""
    return max((r["latency_ms"] for r in rows if r["stage"] == "total"), default=0.0)


def summary(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"n": 0}
    a = np.asarray(xs)
    return {"n": len(xs), "p50": float(np.median(a)), "max": float(a.max()), "sum": float(a.sum())}
