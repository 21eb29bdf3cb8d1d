"""One round at one rank: what came in, what is still missing, what to send."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workloads.transport.completion import SCATTER_SHARE, CompletionPolicy, StageProgress
from workloads.transport.layout import Layout
from workloads.transport.screen import screen, value_bounds
from workloads.transport.wire import HEADER_BYTES, SCATTER

STAGE_SCATTER = "scatter"
STAGE_GATHER = "gather"
STAGE_DRAIN = "drain"  # this rank has all it will get; its own first transmissions finish
STAGE_DONE = "done"


@dataclass(slots=True)
class SendJob:
    """Packets of one shard to one peer: a first transmission (in order) or a repair."""

    peer: int
    rs: RoundState
    stage: int
    shard: int
    src: np.ndarray  # the shard's float32 elements, viewed as uint8
    indices: list[int] | range
    first: bool
    pos: int = 0
    cancelled: bool = False
    addr: int = 0  # address of src's first byte (the batched send points its iovec there)

    def unsent(self, i: int) -> bool:
        """True if packet i is still due from this (first-transmission) job."""
        return self.first and not self.cancelled and i >= self.pos and self.pos < len(self.indices)


@dataclass(slots=True)
class Timing:
    """Per-round constants a policy needs (seconds)."""

    t_max_s: float
    p50_s: float
    gap_s: float
    pair_pkt_s: float  # one full packet's time at the per-pair pacing rate


@dataclass(slots=True, eq=False)
class RoundState:
    """Receive bookkeeping of both stages plus the data kept to answer NACKs.

    `data` is this rank's own copy of its input (scatter repairs come from it, and missing
    gathered elements are filled from it); `out` becomes the result; `reduced` is this rank's
    finished shard, kept after the round for gather repairs.
    """

    round: int
    me: int
    layout: Layout
    data: np.ndarray
    policy: CompletionPolicy
    epsilon: float
    eps_id: int
    t_start: float
    timing: Timing
    out: np.ndarray = field(init=False)
    partial: np.ndarray = field(init=False)
    reduced: np.ndarray | None = None
    sc_got: dict[int, np.ndarray] = field(default_factory=dict)
    sc_count: np.ndarray = field(init=False)
    ga_got: dict[int, np.ndarray] = field(default_factory=dict)
    sc: StageProgress = field(init=False)
    ga: StageProgress = field(init=False)
    sc_last: set[int] = field(default_factory=set)
    ga_last: set[int] = field(default_factory=set)
    stage: str = STAGE_SCATTER
    t_scatter_end: float = 0.0
    t_gather_end: float = 0.0
    cap_hit: bool = False
    pkts_expected: int = 0
    pkts_received: int = 0
    eps_mismatch: int = 0
    first_jobs: dict[tuple[int, int], SendJob] = field(default_factory=dict)
    #: as a sender, per (peer, stage): which packets wait in a repair job (a bool per packet)
    repairs_queued: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    repairs_sent: dict[tuple[int, int], int] = field(default_factory=dict)
    #: bytes received from each rank in this round (every datagram from the member it names),
    #: and wire bytes of repairs queued to it: the anti-amplification rule compares the two
    rx_bytes: np.ndarray = field(init=False)
    repair_bytes: np.ndarray = field(init=False)
    #: per stage (wire.SCATTER, wire.GATHER): a received value is used only below this
    bounds: tuple[float, float] = field(init=False)
    nack_hold: dict[tuple[int, int], float] = field(default_factory=dict)
    recheck_at: float | None = None
    #: as a receiver: repair requests sent per (peer, stage), and when a STOP last went out
    asks: dict[tuple[int, int], int] = field(default_factory=dict)
    stop_sent: dict[tuple[int, int], float] = field(default_factory=dict)
    #: as a sender: the (peer, stage)s whose receiver said STOP
    stopped: set[tuple[int, int]] = field(default_factory=set)
    #: as a receiver: the (peer, stage)s of which some DATA was taken (Repairs._moved_on);
    #: as a sender: the (peer, stage)s that peer has left, as its later DATA shows
    moved_on: set[tuple[int, int]] = field(default_factory=set)
    left: set[tuple[int, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        lay, me, world = self.layout, self.me, self.layout.world
        peers = [p for p in range(world) if p != me]
        self.out = self.data.copy()
        s, n_me = lay.start(me), lay.length(me)
        self.partial = self.data[s : s + n_me].copy()
        own = 1 if lay.contributes(me) else 0  # a parameter server's zeros count for nothing
        self.sc_count = np.full(lay.npkts(me), own, dtype=np.int32)
        self.rx_bytes = np.zeros(world, dtype=np.uint64)
        self.repair_bytes = np.zeros(world, dtype=np.int64)
        self.bounds = value_bounds(world)
        for p in peers:
            self.sc_got[p] = np.zeros(lay.npkts(me), dtype=bool)
            self.ga_got[p] = np.zeros(lay.npkts(p), dtype=bool)
        t = self.timing
        common = dict(
            round_start=self.t_start,
            t_max_s=t.t_max_s,
            p50_s=t.p50_s,
            gap_s=t.gap_s,
            epsilon=self.epsilon,
        )
        budgets: dict[int, float] = {}
        self.sc = StageProgress(
            got=self.sc_got,
            lengths={p: n_me for p in peers} if n_me else {},
            per_pkt=lay.per_pkt,
            share=SCATTER_SHARE,
            expected=len(peers) * n_me,
            peers=len(peers) if n_me else 0,
            last_rx=self.t_start,
            peer_budgets_s=budgets,
            **common,
        )
        ga_peers = [p for p in peers if lay.length(p)]
        self.ga = StageProgress(
            got=self.ga_got,
            lengths={p: lay.length(p) for p in ga_peers},
            per_pkt=lay.per_pkt,
            share=1.0,
            expected=sum(lay.length(p) for p in peers),
            peers=len(ga_peers),
            last_rx=self.t_start,
            peer_budgets_s=budgets,
            **common,
        )
        self.pkts_expected = len(peers) * lay.npkts(me) + sum(lay.npkts(p) for p in peers)

    def accept(self, h, rbuf: np.ndarray, now: float, body: int = HEADER_BYTES) -> str | None:
        """Take one decoded DATA datagram of this round (its values at byte `body` of `rbuf`);
        None if used, else why not. Values that fail the screen (screen.py) drop the datagram
        alone: its packet stays missing, as if lost."""
        if h.eps_id != self.eps_id:
            self.eps_mismatch += 1
        lay = self.layout
        if h.stage == SCATTER:
            if self.stage != STAGE_SCATTER:
                return "late"
            shard, got, prog, last = self.me, self.sc_got[h.src], self.sc, self.sc_last
        else:
            if self.stage in (STAGE_DRAIN, STAGE_DONE):
                return "late"
            shard, got, prog, last = h.src, self.ga_got[h.src], self.ga, self.ga_last
        off, cnt, per = h.offset, h.count, lay.per_pkt
        i = off // per
        left = lay.length(shard) - off  # packet i's count is min(per, left)
        if i >= len(got) or cnt != (per if per < left else left):
            return "range"
        if got[i]:
            return "duplicate"
        vals = rbuf[body : body + 4 * cnt].view(np.float32)
        why = screen(vals, self.bounds[h.stage])
        if why is not None:
            return why
        got[i] = True
        if h.stage == SCATTER:
            self.partial[off : off + cnt] += vals
            self.sc_count[i] += 1
        else:
            base = lay.start(shard) + off
            self.out[base : base + cnt] = vals
        prog.received += cnt
        prog.last_rx = now
        self.pkts_received += 1
        if h.timeout_us:
            prog.peer_budgets_s[h.src] = h.timeout_us / 1e6
        if h.flags & 1 and h.src not in last:
            last.add(h.src)
            prog.last_seen += 1
        return None

    def end_scatter(self, now: float, cap_hit: bool) -> None:
        """Reduce this rank's shard from what arrived and make it the stage's result."""
        lay, me = self.layout, self.me
        counts = None
        if self.sc.missing > 0:
            counts = np.repeat(self.sc_count, lay.per_pkt)[: lay.length(me)]
        self.policy.combine(self.partial, counts, lay.contributors)
        s = lay.start(me)
        self.out[s : s + lay.length(me)] = self.partial
        self.reduced = self.partial
        self.cap_hit |= cap_hit
        self.t_scatter_end = now
        self.stage = STAGE_GATHER
        self.ga.last_rx = max(self.ga.last_rx, now)

    def end_gather(self, now: float, cap_hit: bool) -> None:
        self.cap_hit |= cap_hit
        self.t_gather_end = now
        self.stage = STAGE_DRAIN

    def finish(self) -> None:
        """Fill every gathered element that never came, then drop receive-side state."""
        lay, world = self.layout, self.layout.contributors
        for j, got in self.ga_got.items():
            for a, b in missing_runs(got):
                s = lay.start(j) + a * lay.per_pkt
                e = lay.start(j) + min(b * lay.per_pkt, lay.length(j))
                self.policy.fill_missing(self.out[s:e], self.data[s:e], world)
        self.stage = STAGE_DONE

    def missing_ranges(self, stage: int, peer: int) -> list[tuple[int, int]]:
        """Missing (element offset, count) ranges of what `peer` owes this rank in `stage`."""
        lay = self.layout
        if stage == SCATTER:
            shard, got = self.me, self.sc_got[peer]
        else:
            shard, got = peer, self.ga_got[peer]
        n = lay.length(shard)
        return [
            (a * lay.per_pkt, min(b * lay.per_pkt, n) - a * lay.per_pkt)
            for a, b in missing_runs(got)
        ]

    @property
    def delivered_loss(self) -> float:
        expected = self.sc.expected + self.ga.expected
        return (self.sc.missing + self.ga.missing) / expected if expected else 0.0

    def passes(self, stage: int) -> int:
        """The stage's passes as received here: the first transmission and the repair
        requests to the most-asked peer."""
        return 1 + max((n for (_, s), n in self.asks.items() if s == stage), default=0)

    def first_jobs_pending(self) -> bool:
        return any(j.pos < len(j.indices) and not j.cancelled for j in self.first_jobs.values())


def within_quota(
    ranges: dict[int, list[tuple[int, int]]], quota: int | None, per_pkt: int
) -> dict[int, list[tuple[int, int]]]:
    """The missing ranges per peer, cut to `quota` elements in all (None: all of them).

    Each peer is asked for its share of the quota in proportion to what it owes, from the
    start of its ranges, in whole packets: the repairs then come from every peer at once,
    none of them a bottleneck, and each answer is a packet this rank lacks."""
    total = sum(c for rs in ranges.values() for _, c in rs)
    if quota is None or quota >= total:
        return ranges
    out: dict[int, list[tuple[int, int]]] = {}
    for peer, rs in ranges.items():
        owed = sum(c for _, c in rs)
        left = -(-quota * owed // total)  # ceil: a peer that owes something is asked
        cut = []
        for off, cnt in rs:
            if left <= 0:
                break
            take = min(cnt, -(-left // per_pkt) * per_pkt)
            cut.append((off, take))
            left -= take
        out[peer] = cut
    return out


def missing_runs(got: np.ndarray) -> list[tuple[int, int]]:
    """[a, b) runs of False in a boolean array."""
    if got.all():
        return []
    miss = np.concatenate(([0], (~got).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(miss))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


__all__ = ["RoundState", "SendJob", "Timing", "missing_runs"]
