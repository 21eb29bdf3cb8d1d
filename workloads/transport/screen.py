"""Which received values a round may combine: finite, and small enough that no combine of
them can overflow.

Checked per datagram when it arrives, before any of its values touch the round: a datagram
that fails is dropped alone (counted as "nonfinite" or "overflow") and its packet stays
missing, so the sender's next transmission, a repair, or the policy's fill takes its place.
Screening later, on the combined shard, could only take back every contribution to a
poisoned element, the honest ones too, and spend those peers' repair budgets (a 2-second
NaN burst then stopped a reliable round for good).

Scatter values are summed over N ranks and dblp rescales a sum of c of them by N / c, so each
must stay below FLT_MAX / N: then no sum and no rescale reaches Inf. Gathered values (finished
sums) are held to the same bound: a real gradient sum that large has diverged anyway, and one
rule for both stages is one thing to check in C. A rank's own values are its own business
and are not screened (N x own fills a missing gathered element).
"""

from __future__ import annotations

import numpy as np

FLT_MAX = float(np.finfo(np.float32).max)


def value_bounds(world: int) -> tuple[float, float]:
    """The bound of each stage, indexed by wire.SCATTER (0) and wire.GATHER (1): a datagram's
    values are used only if every |x| < bound. FLT_MAX / N rounded down to a float32, so the
    compiled path compares against the very same number."""
    b = np.float32(FLT_MAX / world)
    if float(b) > FLT_MAX / world:
        b = np.nextafter(b, np.float32(0))
    return float(b), float(b)


def screen(vals: np.ndarray, bound: float) -> str | None:
    """None if every value of `vals` (float32) is below `bound` in magnitude, else why not.

    Two reductions, not an elementwise mask: NaN propagates through min and max, so one pair
    of comparisons decides."""
    lo, hi = float(vals.min()), float(vals.max())
    if -bound < lo and hi < bound:
        return None
    if np.isfinite(lo) and np.isfinite(hi):
        return "overflow"
    return "nonfinite"
