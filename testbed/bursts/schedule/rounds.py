"""Which rounds a round-aligned stream hits: 2-3 (its `RoundPlan`) seeded rounds of the run."""

from __future__ import annotations

import random

from testbed.bursts.presets import RoundPlan
from testbed.bursts.schedule.events import ScheduleError

__all__ = ["hit_rounds"]


def hit_rounds(plan: RoundPlan, rng: random.Random, total: int) -> list[int]:
    """Sorted distinct rounds in [skip, total), never two adjacent, so every hit round has a
    calm round on each side (its neighbours are the calm baseline it is compared with).

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
