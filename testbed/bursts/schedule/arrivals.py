"""When bursts start (a stream's arrival process), and the Gilbert–Elliott loss chain of one."""

from __future__ import annotations

import random

from testbed.bursts.presets import Stream

__all__ = ["burst_starts", "gilbert_elliott_steps"]


def burst_starts(stream: Stream, rng: random.Random, duration_s: float) -> list[float]:
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
