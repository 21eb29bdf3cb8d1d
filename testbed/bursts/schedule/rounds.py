"""Which rounds a round-aligned stream hits: its `RoundPlan`'s seeded rounds of the run, 2-3
isolated ones (`count`, the paper's events) or a share of them (`fraction`, the dose presets)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

from testbed.bursts.presets import RoundPlan
from testbed.bursts.schedule.events import ScheduleError

__all__ = ["hit_rounds"]


def hit_rounds(plan: RoundPlan, rng: random.Random, total: int) -> list[int]:
    """Sorted distinct rounds in [skip, total), drawn from ``rng``."""
    if plan.fraction is not None:
        return _fraction_of_rounds(plan, rng, total)
    return _isolated_rounds(plan, rng, total)


def _isolated_rounds(plan: RoundPlan, rng: random.Random, total: int) -> list[int]:
    """`count` rounds, never two adjacent, so every hit round has a calm round on each side
    (its neighbours are the calm baseline it is compared with).

    k hits fit in the n = total - skip eligible rounds when n >= 2k - 1; k is drawn from
    [least, most], then cut to what fits; fewer than `least` is an error naming the rounds.
    """
    n = total - plan.skip
    least, most = plan.count
    fits = (n + 1) // 2 if n > 0 else 0
    if fits < least:
        raise ScheduleError(
            f"rounds: {least} round-aligned events need {2 * least - 1 + plan.skip} rounds "
            f"(the first {plan.skip} never hit, none adjacent); the run has {total}"
        )
    k = min(rng.randint(least, most), fits)
    # k sorted picks among n - (k - 1) slots, the i-th shifted by i: distinct, none adjacent
    picks = sorted(rng.sample(range(n - (k - 1)), k))
    return [plan.skip + p + i for i, p in enumerate(picks)]


def _fraction_of_rounds(plan: RoundPlan, rng: random.Random, total: int) -> list[int]:
    """round(f x n) of the n = total - skip eligible rounds (halves up), adjacent ones allowed.

    The first k of one seeded shuffle: on the same seed a smaller fraction hits a subset of a
    larger one's rounds, so a higher dose adds hit rounds to a lower one's.
    A run too short for one hit is an error naming the rounds: it would be a calm run.
    """
    # the decimal the preset wrote, exactly: 0.3 x 5 is 1.5 and rounds to 2, whatever binary
    # floating point makes of 0.3
    f = Fraction(repr(plan.fraction))
    n = max(total - plan.skip, 0)
    k = math.floor(f * n + Fraction(1, 2))
    if k < 1:
        need = math.ceil(Fraction(1, 2) / f) + plan.skip
        raise ScheduleError(
            f"rounds: a fraction {plan.fraction:g} of the rounds after the first {plan.skip} "
            f"hits none of the run's {total}; it needs {need} or more"
        )
    order = list(range(plan.skip, total))
    rng.shuffle(order)
    return sorted(order[:k])
