"""When a stage of a round is over, and what stands in for the data that never came.

One small base (GRACE style) and one class per policy. All policies see the same
`StageProgress`, share one idle detector (gap = max(2 ms, 4 packet times at the pacing rate))
and one hard cap t_max per round, of which the scatter stage may use the first half and the
gather stage the rest; so comparing them compares only their rules. The idle detector is
LAST-aware (see CompletionPolicy.idle).

Units: a round returns the SUM over ranks (hooks divide by N). Per policy, for an element whose
data did not arrive:

- reliable: never happens (repairs until everything is in).
- optireduce: a missing scatter contribution counts as 0 (the owner's partial sum, as its
  public code does); a missing gathered element keeps this rank's own input value x, so the
  hook's mean is x / N, exactly OptiReduce's behaviour (its output buffer starts as the input
  and DDP divides by N). `rescale` (an ablation) instead scales each element's partial sum by
  N / contributions received.
- dblp: scatter sums are rescaled per element by N / contributions received (unbiased for
  the sum if loss is independent of the values); a missing gathered element becomes N * x, so
  the hook's mean is this rank's own gradient x, its best local estimate of the mean.
"""

from __future__ import annotations

import math
import statistics
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

IDLE_GAP_MIN_S = 0.002
IDLE_GAP_PACKETS = 4
TAIL_GAPS = 4  # silence before some peer's LAST packet counts as idle only after this long:
TAIL_P50_FRACTION = 0.1  # max(TAIL_GAPS gaps, 10 % of the calibrated p50)
SCATTER_SHARE = 0.5  # the scatter stage must end by round_start + SCATTER_SHARE * budget


def idle_gap_s(rate_mbps: float, mtu: int) -> float:
    """max(2 ms, 4 packet times at the rank's pacing rate), a packet being an L2 frame."""
    return max(IDLE_GAP_MIN_S, IDLE_GAP_PACKETS * (mtu + 14) * 8 / (rate_mbps * 1e6))


@dataclass(slots=True)
class StageProgress:
    """What a policy knows about one stage of one round at one rank (times: monotonic s)."""

    round_start: float
    share: float  # fraction of the round's budget by whose end this stage must be over
    t_max_s: float  # hard cap on the round
    p50_s: float  # calibrated burst-free p50 round time
    gap_s: float  # the shared idle gap
    expected: int  # elements this rank must receive in this stage
    peers: int  # ranks that send to this rank in this stage
    last_rx: float  # last new DATA arrival (the stage start until one arrives)
    received: int = 0  # distinct elements received
    last_seen: int = 0  # peers whose LAST-flagged packet arrived
    peer_budgets_s: dict[int, float] = field(default_factory=dict)  # from timeout_us

    @property
    def missing(self) -> int:
        return self.expected - self.received


@dataclass(frozen=True, slots=True)
class Verdict:
    done: bool = False
    nack: bool = False  # ask the senders for the missing ranges now
    cap_hit: bool = False  # ended by the hard cap / timeout with data still missing
    recheck_at: float | None = None  # when to ask again if no packet arrives first


class CompletionPolicy(ABC):
    """A stage ends when `verdict` says so; then `combine` and `fill_missing` patch the data."""

    name: ClassVar[str]
    repairs: ClassVar[bool]
    epsilon: float = 0.0

    def idle(self, p: StageProgress, now: float) -> bool:
        """The shared idle detector: no new data for one gap once every peer's LAST packet
        came; while some LAST is still out, for max(TAIL_GAPS gaps, 10 % of p50) (OptiReduce's
        early timeout is ~10 % of its timeout). The second clause keeps a sender that the OS
        descheduled mid-stream (routine with 4 ranks on 2 cores) from looking finished, at the
        cost of a later NACK when a stream's tail really was lost."""
        return now >= self.idle_at(p)

    def idle_at(self, p: StageProgress) -> float:
        """When the stream becomes idle if nothing more arrives."""
        if p.last_seen >= p.peers:
            return p.last_rx + p.gap_s
        return p.last_rx + max(TAIL_GAPS * p.gap_s, TAIL_P50_FRACTION * p.p50_s)

    def budget_s(self, p: StageProgress) -> float:
        """The round's time budget; None-like infinity for a policy with no cap."""
        return p.t_max_s

    def deadline(self, p: StageProgress) -> float:
        return p.round_start + p.share * self.budget_s(p)

    @abstractmethod
    def verdict(self, p: StageProgress, now: float) -> Verdict: ...

    def combine(self, partial: np.ndarray, counts: np.ndarray | None, world: int) -> None:
        """Patch a reduced shard in place; counts[e] = contributions (own included) of element e,
        or None when every contribution arrived. Default: leave the plain sum."""
        return

    def fill_missing(self, out: np.ndarray, own: np.ndarray, world: int) -> None:
        """Fill gathered elements that never arrived (out and own are equal-length slices)."""
        out[:] = own

    def observe(self, elapsed_s: float, delivered: float) -> None:
        """Learn from a finished round (only the adaptive timeout does)."""
        return

    def header_budget_us(self) -> int:
        """This rank's estimate carried in every DATA header's timeout_us (0: none)."""
        return 0


def _rescale(partial: np.ndarray, counts: np.ndarray | None, world: int) -> None:
    if counts is not None:
        partial *= np.float32(world) / counts.astype(np.float32)


class Reliable(CompletionPolicy):
    """Exact: NACK whatever is missing each time the stream goes idle, until all is in."""

    name = "reliable"
    repairs = True

    def budget_s(self, p: StageProgress) -> float:
        return math.inf

    def verdict(self, p: StageProgress, now: float) -> Verdict:
        if p.missing <= 0:
            return Verdict(done=True)
        if self.idle(p, now):
            return Verdict(nack=True, recheck_at=now + p.gap_s)
        return Verdict(recheck_at=self.idle_at(p))


class Dblp(CompletionPolicy):
    """Bounded loss: over once >= (1 - eps) is in and the stream is idle; else repair to eps."""

    name = "dblp"
    repairs = True

    def __init__(self, epsilon: float) -> None:
        if not 0.0 <= epsilon < 1.0:
            raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
        self.epsilon = epsilon

    def allowed(self, p: StageProgress) -> int:
        return math.floor(self.epsilon * p.expected + 1e-9)

    def verdict(self, p: StageProgress, now: float) -> Verdict:
        missing = p.missing
        if missing <= 0:
            return Verdict(done=True)
        allowed = self.allowed(p)
        dl = self.deadline(p)
        if now >= dl:
            return Verdict(done=True, cap_hit=missing > allowed)
        if self.idle(p, now):
            if missing <= allowed:
                return Verdict(done=True)
            return Verdict(nack=True, recheck_at=min(now + p.gap_s, dl))
        return Verdict(recheck_at=min(self.idle_at(p), dl))

    def combine(self, partial: np.ndarray, counts: np.ndarray | None, world: int) -> None:
        _rescale(partial, counts, world)

    def fill_missing(self, out: np.ndarray, own: np.ndarray, world: int) -> None:
        np.multiply(own, np.float32(world), out=out)


class OptiReduce(CompletionPolicy):
    """Bounded time, no retransmission.

    fixed: over when everything is in or the round reaches t_max (the public code's effective
    behaviour). adaptive: t_B = min(t_max, max(2 * p50, median over ranks of each rank's
    elapsed / completion + 1 ms)), each rank's estimate carried in DATA headers; over early once
    every peer's LAST packet came and the stream is idle.
    """

    name = "optireduce"
    repairs = False

    def __init__(self, mode: str = "adaptive", rescale: bool = False) -> None:
        if mode not in ("adaptive", "fixed"):
            raise ValueError(f"optireduce mode must be adaptive|fixed, got {mode}")
        self.mode = mode
        self.rescale = rescale
        self.estimate_s: float | None = None

    def budget_s(self, p: StageProgress) -> float:
        if self.mode == "fixed":
            return p.t_max_s
        votes = list(p.peer_budgets_s.values())
        if self.estimate_s is not None:
            votes.append(self.estimate_s)
        if not votes:
            return p.t_max_s
        return min(p.t_max_s, max(2.0 * p.p50_s, statistics.median(votes)))

    def verdict(self, p: StageProgress, now: float) -> Verdict:
        if p.missing <= 0:
            return Verdict(done=True)
        dl = self.deadline(p)
        if now >= dl:
            return Verdict(done=True, cap_hit=True)
        if self.mode == "adaptive" and p.last_seen >= p.peers:
            if self.idle(p, now):
                return Verdict(done=True)
            return Verdict(recheck_at=min(self.idle_at(p), dl))
        return Verdict(recheck_at=dl)

    def combine(self, partial: np.ndarray, counts: np.ndarray | None, world: int) -> None:
        if self.rescale:
            _rescale(partial, counts, world)

    def observe(self, elapsed_s: float, delivered: float) -> None:
        if self.mode == "adaptive":
            self.estimate_s = elapsed_s / max(delivered, 0.05) + 0.001

    def header_budget_us(self) -> int:
        return 0 if self.estimate_s is None else int(self.estimate_s * 1e6)


def make_policy(
    name: str, *, epsilon: float = 0.0, mode: str = "adaptive", rescale: bool = False
) -> CompletionPolicy:
    if name == "reliable":
        return Reliable()
    if name == "dblp":
        return Dblp(epsilon)
    if name == "optireduce":
        return OptiReduce(mode, rescale)
    raise ValueError(f"unknown policy {name!r}: dblp|optireduce|reliable")
