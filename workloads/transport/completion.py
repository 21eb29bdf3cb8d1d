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
  the hook's mean is this rank's own gradient x, its best local estimate of the mean (`--fill
  rescale`, its default). Its NACKs ask only for the excess beyond ε (`Dblp.repair_elems`);
  reliable's ask for everything.
- mlt (the paper's baseline): dblp's rules with one fixed ε; by default `--fill zero`, the
  paper's: a missing scatter contribution and a missing gathered element both count 0.

dblp and mlt also take `--stop early` (a stage ends as soon as each peer has sent >= 1 - ε of
it, and the receiver tells its senders to stop) and `--control tcp` (the paper's probe, bitmap
and Stop over TCP); the engine carries both out (repair.py, control.py).

ε is a per-round input (the phase controller decides it per step): it reaches the policy on one
route, `TransposeAllReduce.allreduce(epsilon=)` -> `StageProgress.epsilon`, checked once by
`check_epsilon`. A new policy is one class registered with `@register` (docs/
adding-a-completion-policy.md); the transport names, the hooks and the run spec's choices
derive from `POLICIES`.
"""

from __future__ import annotations

import math
import statistics
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np

from workloads.transport.dilation import TimeDilation
from workloads.transport.traits import TCP_TRAITS, Traits

IDLE_GAP_MIN_S = 0.002
IDLE_GAP_PACKETS = 4
TAIL_GAPS = 4  # silence before some peer's LAST packet counts as idle only after this long:
TAIL_P50_FRACTION = 0.1  # max(TAIL_GAPS gaps, 10 % of the calibrated p50)
SCATTER_SHARE = 0.5  # the scatter stage must end by round_start + SCATTER_SHARE * budget
#: dblp asks for this multiple of the data it lacks beyond ε: the repairs cross the same
#: bursty path, so some are lost too; what is still short is asked for again, smaller.
REPAIR_MARGIN = 1.5


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """ε is a fraction of a round's data that may stay missing: [0, 1)."""
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {epsilon}")
    return epsilon


def idle_gap_s(rate_mbps: float, mtu: int, time_scale: float = 1.0) -> float:
    """max(2 ms, 4 packet times at the rank's pacing rate), a packet being an L2 frame; under
    time dilation (`time_scale` D, the rate already / D) the 2 ms floor is D x 2 ms too."""
    floor = TimeDilation(time_scale).played(IDLE_GAP_MIN_S)
    return max(floor, IDLE_GAP_PACKETS * (mtu + 14) * 8 / (rate_mbps * 1e6))


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
    epsilon: float = 0.0  # this round's loss budget (only loss-bounded policies read it)
    #: per sending peer: its packets' arrival bitmap and its elements (the stop rule's view)
    got: dict[int, np.ndarray] = field(default_factory=dict)
    lengths: dict[int, int] = field(default_factory=dict)
    per_pkt: int = 1

    @property
    def missing(self) -> int:
        return self.expected - self.received

    def peer_missing(self, peer: int) -> int:
        """Elements `peer` owes this rank in this stage (its last packet may be short)."""
        got, n = self.got[peer], self.lengths[peer]
        if not len(got):
            return 0
        last = bool(got[-1])
        full = int(np.count_nonzero(got)) - last
        return n - full * self.per_pkt - (n - (len(got) - 1) * self.per_pkt if last else 0)

    def each_within(self, epsilon: float) -> bool:
        """True if every peer has delivered >= (1 - epsilon) of what it owes."""
        return all(
            self.peer_missing(q) <= math.floor(epsilon * n + 1e-9) for q, n in self.lengths.items()
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    done: bool = False
    nack: bool = False  # ask the senders for the missing ranges now
    cap_hit: bool = False  # ended by the hard cap / timeout with data still missing
    recheck_at: float | None = None  # when to ask again if no packet arrives first


class CompletionPolicy(ABC):
    """A stage ends when `verdict` says so; then `combine` and `fill_missing` patch the data.

    One instance lives for the whole job (a policy may learn across rounds, as the adaptive
    timeout does); what changes per round arrives in the StageProgress.
    """

    name: ClassVar[str]
    #: What the policy is (traits.py): every policy declares its own, and run.json records it;
    #: a round's ε reaches the policy (and the rounds table) only if `uses_epsilon`.
    traits: ClassVar[Traits]
    #: How a bounded-loss policy's control messages travel: "udp" (NACKs in datagrams) or
    #: "tcp" (probe, bitmap and Stop over one connection per peer pair); engine.py reads it.
    control: Literal["udp", "tcp"] = "udp"
    #: "early": a stage ends as soon as (1 - ε) of it is in, and its senders are told to stop;
    #: "idle": it ends when the stream goes idle (repairs aside).
    stop: Literal["early", "idle"] = "idle"

    @classmethod
    def from_config(cls, config: Any) -> CompletionPolicy:
        """The job's instance, from the TransportConfig (override to read its knobs)."""
        return cls()

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

    def repair_elems(self, p: StageProgress) -> int | None:
        """How many of the missing elements a NACK asks for; None: all of them."""
        return None

    def observe(self, elapsed_s: float, delivered: float) -> None:
        """Learn from a finished round (only the adaptive timeout does)."""
        return

    def header_budget_us(self) -> int:
        """This rank's estimate carried in every DATA header's timeout_us (0: none)."""
        return 0


def _rescale(partial: np.ndarray, counts: np.ndarray | None, world: int) -> None:
    if counts is not None:  # no contribution (only at a parameter server): the sum stays 0
        partial *= np.float32(world) / np.maximum(counts, 1).astype(np.float32)


#: name -> policy class; `@register` adds one. Insertion order is the listing order.
POLICIES: dict[str, type[CompletionPolicy]] = {}
#: The one transport that is not a completion policy: DDP's own all-reduce over Gloo (TCP).
TCP = "tcp"
_P = TypeVar("_P", bound=type[CompletionPolicy])


def register(cls: _P) -> _P:
    """Class decorator: make a policy available by its `name` everywhere (transport, hooks,
    `testbed run --transport`)."""
    if cls.name in POLICIES or cls.name == TCP:
        raise ValueError(f"a transport called {cls.name!r} already exists")
    if not isinstance(cls.__dict__.get("traits"), Traits):
        raise TypeError(f"policy {cls.name!r} must declare its own `traits` (traits.py)")
    POLICIES[cls.name] = cls
    return cls


@register
class Reliable(CompletionPolicy):
    """Exact: NACK whatever is missing each time the stream goes idle, until all is in."""

    name = "reliable"
    traits = Traits("exact")

    def budget_s(self, p: StageProgress) -> float:
        return math.inf

    def verdict(self, p: StageProgress, now: float) -> Verdict:
        if p.missing <= 0:
            return Verdict(done=True)
        if self.idle(p, now):
            return Verdict(nack=True, recheck_at=now + p.gap_s)
        return Verdict(recheck_at=self.idle_at(p))


@register
class Dblp(CompletionPolicy):
    """Bounded loss: over once >= (1 - ε) is in (stop early: at once, once each peer has sent
    >= (1 - ε) of its part, and the senders are told to stop; stop idle: once the stream is
    idle too); else repair to ε. ε comes from the phase
    controller. fill rescale: missing scatter contributions rescaled, missing gathered elements
    N x own; fill zero (the paper's): both count 0."""

    name = "dblp"
    traits = Traits(
        "bounded-loss", uses_epsilon=True, phase_aware=True,
        roles={"paper": "system", "design": "system"},
    )  # fmt: skip
    #: what stands in for missing data when the config leaves `fill` unset
    default_fill: ClassVar[str] = "rescale"

    def __init__(self, stop: str = "idle", fill: str | None = None, control: str = "udp") -> None:
        fill = fill or self.default_fill
        for knob, value, choices in (
            ("stop", stop, ("early", "idle")),
            ("fill", fill, ("zero", "rescale")),
            ("control", control, ("udp", "tcp")),
        ):
            if value not in choices:
                raise ValueError(f"{self.name} {knob} must be {'|'.join(choices)}, got {value!r}")
        self.stop, self.fill, self.control = stop, fill, control

    @classmethod
    def from_config(cls, config: Any) -> Dblp:
        return cls(config.stop, config.fill, config.control)

    @staticmethod
    def allowed(p: StageProgress) -> int:
        return math.floor(p.epsilon * p.expected + 1e-9)

    def verdict(self, p: StageProgress, now: float) -> Verdict:
        missing = p.missing
        if missing <= 0:
            return Verdict(done=True)
        allowed = self.allowed(p)
        dl = self.deadline(p)
        if now >= dl:
            return Verdict(done=True, cap_hit=missing > allowed)
        if self.stop == "early" and missing <= allowed and p.each_within(p.epsilon):
            return Verdict(done=True)
        if self.idle(p, now):
            if missing <= allowed:
                return Verdict(done=True)
            return Verdict(nack=True, recheck_at=min(now + p.gap_s, dl))
        return Verdict(recheck_at=min(self.idle_at(p), dl))

    def combine(self, partial: np.ndarray, counts: np.ndarray | None, world: int) -> None:
        if self.fill == "rescale":
            _rescale(partial, counts, world)

    def fill_missing(self, out: np.ndarray, own: np.ndarray, world: int) -> None:
        """rescale: N x own, so the mean is this rank's own gradient. zero: the element's sum is
        unknown and counts 0, so its mean is 0: the element is not updated by this round (the
        paper zero-fills a missing chunk of the broadcast the same way)."""
        if self.fill == "rescale":
            np.multiply(own, np.float32(world), out=out)
        else:
            out[:] = 0.0

    def repair_elems(self, p: StageProgress) -> int | None:
        """udp: only what lies beyond ε (with `REPAIR_MARGIN`): asking for everything missing
        re-sent up to ε's worth of data through the burst that lost it, and the round
        waited for all of it although ε of it may stay missing. tcp (the paper's rule): the
        whole bitmap of what is missing, once anything beyond ε is (0: no repair due)."""
        excess = max(0, p.missing - self.allowed(p))
        if self.control == "tcp":
            return None if excess else 0
        return math.ceil(REPAIR_MARGIN * excess)


@register
class Mlt(Dblp):
    """The paper's baseline (a software MLT without switch support): dblp's rules and repairs
    with one fixed tolerance P, the run's pinned ε, no phase controller; missing data counts 0
    unless `fill` says otherwise."""

    name = "mlt"
    traits = Traits("bounded-loss", uses_epsilon=True, roles={"paper": "baseline"})
    default_fill = "zero"


@register
class OptiReduce(CompletionPolicy):
    """Bounded time, no retransmission.

    fixed: over when everything is in or the round reaches t_max (the public code's effective
    behaviour). adaptive: t_B = min(t_max, max(2 * p50, median over ranks of each rank's
    elapsed / completion + 1 ms)), each rank's estimate carried in DATA headers; over early once
    every peer's LAST packet came and the stream is idle.
    """

    name = "optireduce"
    traits = Traits("bounded-time", roles={"design": "baseline"})

    @classmethod
    def from_config(cls, config: Any) -> OptiReduce:
        return cls(config.optireduce_mode, config.rescale)

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


def transport_names() -> tuple[str, ...]:
    """Every transport a run can name: the registered policies, then tcp."""
    return (*POLICIES, TCP)


def transport_traits(name: str) -> Traits:
    """The traits of transport `name`: a registered policy's own, or tcp's."""
    if name == TCP:
        return TCP_TRAITS
    try:
        return POLICIES[name].traits
    except KeyError:
        raise ValueError(
            f"unknown transport {name!r}: one of {', '.join(transport_names())}"
        ) from None


def make_policy(name: str, config: Any) -> CompletionPolicy:
    """The job's instance of policy `name` (see POLICIES)."""
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}: one of {', '.join(POLICIES)}") from None
    return cls.from_config(config)
