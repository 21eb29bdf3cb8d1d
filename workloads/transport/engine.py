"""The transport's single event loop: one thread per rank that sends, receives and decides.

One thread does everything (pacing, receiving, NACK answers, completion), blocking in poll
between events, so a rank costs CPU only for the packets it moves: with 2 cores shared by 4
ranks there is no room for busy loops or lock ping-pong. The thread outlives each round, so a
rank that finished a round still answers its peers' NACKs for the last HISTORY rounds.

Trust: a datagram is used only if it carries the job's token, comes from the address and port
of the member its header names (the rendezvous table; the header's rank alone is a claim),
belongs to the current round or a small window around it, and (DATA) holds values that pass
screen.py (finite, and below FLT_MAX / N), and with `--integrity mac` the job's MAC
(integrity.py; the token alone is in clear in every datagram). Everything else is dropped and
counted by reason, each datagram alone; NACK answers go only to verified members and are
bounded per round, so a NACK cannot be turned into an amplifier.

Here: the loop and the life of a round (start, advance stage by stage, finish). The sides the
loop drives are mixins over the same state: receive.py, send.py, repair.py.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np

from workloads.transport import fastpath, wire
from workloads.transport.completion import CompletionPolicy
from workloads.transport.config import TransportConfig
from workloads.transport.control import ControlLinks
from workloads.transport.endpoint import Endpoint
from workloads.transport.integrity import Mac
from workloads.transport.layout import Layout
from workloads.transport.mmsg import source_key
from workloads.transport.pacer import Pacer
from workloads.transport.receive import Receiver
from workloads.transport.repair import Repairs
from workloads.transport.roundstate import (
    STAGE_DRAIN,
    STAGE_GATHER,
    STAGE_SCATTER,
    RoundState,
    SendJob,
    Timing,
)
from workloads.transport.schedstat import thread_times_ns
from workloads.transport.send import Sender
from workloads.transport.stats import RoundStats

HISTORY = 4  # finished rounds whose data a rank keeps to answer NACKs
RELIABLE_GIVE_UP_S = 60.0  # a reliable round that cannot finish in this long means a dead peer
LOSSY_GRACE_S = 5.0  # a lossy round past its budget by this much means a stuck loop
IDLE_POLL_S = 0.5
#: Packets' worth of tokens a peer gathers before the loop wakes to send to it (the pacer's
#: depth caps it): one wake-up and one sendmmsg per few packets instead of per packet.
PACE_BATCH = 4
#: Shortest gap between two passes of the loop that arrivals alone cause (a deadline or the
#: pacer may wake it sooner): half the smallest idle gap, so no idle is misjudged.
MIN_PASS_S = 0.001
#: Rejections that are ordinary protocol life, not suspect input (not counted as bad).
NOT_BAD = frozenset(("late", "duplicate", "injected", "unknown_round", "amplification"))


@dataclass
class Request:
    data: np.ndarray
    policy: CompletionPolicy
    epsilon: float
    eps_id: int
    timing: Timing
    inject: bool
    #: None: the transpose all-reduce; a rank: it owns the whole bucket (parameter server)
    owner: int | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple[np.ndarray, RoundStats] | None = None
    error: BaseException | None = None


class Engine(Receiver, Sender, Repairs, threading.Thread):
    """One rank's event loop and its rounds; its receive, send and repair sides are the mixins
    (receive.py, send.py, repair.py), which share this thread's state."""

    def __init__(
        self,
        rank: int,
        world: int,
        endpoint: Endpoint,
        config: TransportConfig,
        job_token: int,
        links: ControlLinks | None = None,
        mac_key: bytes | None = None,
    ) -> None:
        super().__init__(name=f"tar-engine-{rank}", daemon=True)
        self.me, self.world, self.ep, self.cfg = rank, world, endpoint, config
        self.peers = [p for p in range(world) if p != rank]
        mac = config.integrity == "mac"
        if mac and mac_key is None:
            raise ValueError("integrity mac needs the job's MAC key (drawn at rendezvous)")
        self.mac = Mac(mac_key) if mac else None
        self.per_pkt = wire.elems_per_packet(config.mtu, mac)
        self.body = wire.body_offset(mac)  # where a datagram's payload begins
        self.max_ranges = wire.ranges_per_nack(config.mtu, mac)
        self.pacer = Pacer(self.peers, config.rate_mbps, time.monotonic())
        self.queues: dict[int, deque[SendJob]] = {p: deque() for p in self.peers}
        self.requests: queue.SimpleQueue[Request] = queue.SimpleQueue()
        self.active: RoundState | None = None
        self.active_req: Request | None = None
        self.history: OrderedDict[int, RoundState] = OrderedDict()
        self.pending: dict[int, list[tuple[bytes, bool]]] = {}  # (datagram, came over TCP)
        self.pending_bytes = 0
        self.next_round = 0
        self.stop_flag = False
        self.error: BaseException | None = None
        self.rng = random.Random(config.seed * 100_003 + rank)
        # The test loss applies at all times except during rounds that opted out (calibration).
        self.inject = config.drop > 0
        self.sock_rr = 0
        self.passes = 0  # send passes so far: picks each pass's socket per peer
        self.pass_t = 0.0  # when the current pass of the loop began
        self.tid = 0  # the loop's native thread id, known once run() starts
        self.cpu0_ns = self.wait0_ns = 0
        self.late_s = 0.0  # the active round's latest timer wake-up so far
        # Counters since the previous round ended (attributed to the next RoundStats).
        self.sent_bytes = 0
        self.nacks = 0
        self.retx = 0
        self.skipped = [0, 0]  # payload bytes not sent, by stage, because a receiver said STOP
        self.reasons: Counter[str] = Counter()
        self.job_token = job_token
        decode = wire.decoder(job_token=job_token, world=world, me=rank, mtu=config.mtu, mac=mac)
        self.decode = self.mac.checked(decode) if self.mac else decode
        # expect[i][r]: the source key of rank r's socket i, the only one that sends to our i.
        self.expect = [
            [source_key(*endpoint.dest[r][i]) for r in range(world)] for i in range(endpoint.k)
        ]
        self.rx = self.tx = None
        if config.fastpath and fastpath.available() and not mac:  # C checks no MAC
            self.rx = fastpath.RxFast(
                endpoint.ring, world, rank, self.per_pkt, config.mtu - wire.IP_UDP_BYTES,
                job_token, self.expect,
            )  # fmt: skip
            self.rx.on_seen = self._moved_on
            self.rx.on_count = self._count
            self.tx = fastpath.TxFast(endpoint.batches, job_token, rank, self.per_pkt)
        #: which data path runs (run.json's transport_params say it)
        self.fastpath = "compiled" if self.rx is not None else "python"
        #: the TCP control links (--control tcp), watched as indices k + peer of the poll set
        self.links = links
        self.probes: list[SendJob] = []  # passes sent whose receivers are to be probed
        if links is not None:
            for fd, peer in links.fd_peer.items():
                endpoint.watch(fd, endpoint.k + peer)

    # ---- caller side -------------------------------------------------------------------------

    def submit(self, req: Request) -> None:
        if self.error is not None:
            raise RuntimeError("transport engine failed") from self.error
        self.requests.put(req)
        self.ep.wake()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.stop_flag = True
        self.ep.wake()
        self.join(timeout_s)

    # ---- loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        self.tid = threading.get_native_id()
        try:
            ready: list[int] = []
            while not self.stop_flag:
                self.pass_t = time.monotonic()
                for i in sorted(ready):  # UDP sockets first, then the control links
                    self._drain(i)
                self._advance(time.monotonic())
                while self.active is None and self._take_request():
                    self._advance(time.monotonic())
                self._send(time.monotonic())
                if self.active is not None and self.active.stage == STAGE_DRAIN:
                    self._advance(time.monotonic())  # the last send may have ended the round
                now = time.monotonic()
                sleep = self._wake_in(now)
                ready = self.ep.wait(sleep)
                if ready and sleep > 0:
                    # Arrivals alone wake the loop at most once per MIN_PASS_S: a wake-up per
                    # datagram cost more than the datagram; batching them fills recvmmsg.
                    rest = min(sleep, MIN_PASS_S) - (time.monotonic() - self.pass_t)
                    if rest > 0:
                        time.sleep(rest)
                elif not ready and self.active is not None:
                    # A timer wake (or the eventfd, which comes early): how late the OS ran us
                    # against the protocol's own clock (pacer tick, idle gap, deadlines).
                    late = time.monotonic() - now - self.ep.poll_ms(sleep) / 1e3
                    if late > self.late_s:
                        self.late_s = late
        except BaseException as e:  # surfaced to the caller, never lost in the thread
            self.error = e
            for req in self._outstanding():
                req.error = e
                req.done.set()

    def _count(self, why: str, n: int) -> None:
        self.reasons[why] += n

    def _outstanding(self) -> list[Request]:
        out = [self.active_req] if self.active_req is not None else []
        while True:
            try:
                out.append(self.requests.get_nowait())
            except queue.Empty:
                return out

    def _wake_in(self, now: float) -> float:
        wants = self._wants()
        t = IDLE_POLL_S
        if wants:
            # Wake when a peer can take a batch (PACE_BATCH packets, or what its job has
            # left), not each packet: fewer, fuller passes for the same average rate.
            for p, need in wants.items():
                job = self.queues[p][0]
                wants[p] = need * min(PACE_BATCH, len(job.indices) - job.pos)
        w = self.pacer.wait_s(now, wants) if wants else None
        if w is not None:
            t = min(t, w)
        rs = self.active
        if rs is not None and rs.recheck_at is not None:
            t = min(t, max(0.0, rs.recheck_at - now))
        return t

    # ---- rounds --------------------------------------------------------------------------------

    def _take_request(self) -> bool:
        try:
            req = self.requests.get_nowait()
        except queue.Empty:
            return False
        now = time.monotonic()
        lay = Layout(len(req.data), self.world, self.per_pkt, req.owner)
        rs = RoundState(
            round=self.next_round,
            me=self.me,
            layout=lay,
            data=req.data,
            policy=req.policy,
            epsilon=req.epsilon,
            eps_id=req.eps_id,
            t_start=now,
            timing=req.timing,
        )
        self.next_round += 1
        self.active, self.active_req, self.inject = rs, req, req.inject
        self.cpu0_ns, self.wait0_ns = thread_times_ns(self.tid)
        self.late_s = 0.0
        for p in self.peers:
            if lay.length(p):
                self._queue_first(rs, p, wire.SCATTER, p, req.data, lay.start(p))
        for raw, tcp in self.pending.pop(rs.round, []):
            # Buffered only after decode and the source check passed: replay routes it again.
            self.pending_bytes -= len(raw)
            view = memoryview(raw)
            h = self.decode(view, len(raw))
            assert h.__class__ is not str
            self._dispatch(h, np.frombuffer(raw, dtype=np.uint8), view, len(raw), now, tcp)
        return True

    def _queue_first(self, rs: RoundState, peer: int, stage: int, shard: int, arr, start) -> None:
        lay = rs.layout
        n = lay.length(shard)
        src = arr[start : start + n].view(np.uint8)
        job = SendJob(
            peer, rs, stage, shard, src, range(lay.npkts(shard)), first=True, addr=src.ctypes.data
        )
        rs.first_jobs[(peer, stage)] = job
        self.queues[peer].append(job)

    def _advance(self, now: float) -> None:
        rs = self.active
        if rs is None:
            return
        pol = rs.policy
        rs.recheck_at = None
        nacks = pol.control == "udp"  # over tcp, probes ask for the bitmaps
        if rs.stage == STAGE_SCATTER:
            v = pol.verdict(rs.sc, now)
            if v.nack and nacks:
                self._send_nacks(rs, wire.SCATTER, now)
            if not v.done:
                rs.recheck_at = self._hold_bound(rs, v.recheck_at, wire.SCATTER, now)
            else:
                rs.end_scatter(now, v.cap_hit)
                if pol.stop == "early":
                    self._send_stops(rs, wire.SCATTER, now)
                lay = rs.layout
                if lay.length(self.me):
                    for p in self.peers:
                        self._queue_first(rs, p, wire.GATHER, self.me, rs.reduced, 0)
        if rs.stage == STAGE_GATHER:
            v = pol.verdict(rs.ga, now)
            if v.nack and nacks:
                self._send_nacks(rs, wire.GATHER, now)
            if not v.done:
                rs.recheck_at = self._hold_bound(rs, v.recheck_at, wire.GATHER, now)
            else:
                rs.end_gather(now, v.cap_hit)
                if pol.stop == "early":
                    self._send_stops(rs, wire.GATHER, now)
        if rs.stage == STAGE_DRAIN:
            hard = rs.t_start + pol.budget_s(rs.sc)
            if not rs.first_jobs_pending() or now >= hard:
                self._finish(rs, now)
            else:
                rs.recheck_at = hard
        elif now - rs.t_start > self._give_up_s(rs):
            raise TimeoutError(
                f"rank {self.me}: round {rs.round} ({pol.name}) stuck in {rs.stage} for "
                f"{now - rs.t_start:.1f} s: missing scatter {rs.sc.missing} / gather "
                f"{rs.ga.missing} elements (is every rank alive and calling allreduce?)"
            )

    @staticmethod
    def _hold_bound(rs: RoundState, recheck: float | None, stage: int, now: float) -> float | None:
        """Wake no later than the first NACK hold of this stage that is still to expire."""
        if recheck is None:
            return None
        holds = [t for (_, s), t in rs.nack_hold.items() if s == stage and t > now]
        return min(recheck, *holds) if holds else recheck

    @staticmethod
    def _give_up_s(rs: RoundState) -> float:
        b = rs.policy.budget_s(rs.sc)
        return RELIABLE_GIVE_UP_S if b == float("inf") else b + LOSSY_GRACE_S

    def _finish(self, rs: RoundState, now: float) -> None:
        for job in rs.first_jobs.values():
            job.cancelled = True
        rs.finish()
        delivered = 1.0 - rs.delivered_loss
        rs.policy.observe(now - rs.t_start, delivered)
        suspect = {r: c for r, c in self.reasons.items() if r not in NOT_BAD}
        cpu_ns, wait_ns = thread_times_ns(self.tid)
        if rs.eps_mismatch:
            suspect["eps_mismatch"] = rs.eps_mismatch
        stats = RoundStats(
            round=rs.round,
            t_start_s=rs.t_start,
            t_end_s=now,
            latency_ms=(now - rs.t_start) * 1e3,
            scatter_ms=(rs.t_scatter_end - rs.t_start) * 1e3,
            gather_ms=(rs.t_gather_end - rs.t_scatter_end) * 1e3,
            bytes=self.sent_bytes,
            pkts_expected=rs.pkts_expected,
            pkts_received=rs.pkts_received,
            delivered_loss=rs.delivered_loss,
            epsilon=rs.epsilon,
            nacks=self.nacks,
            retx_pkts=self.retx,
            cap_hit=rs.cap_hit,
            policy=rs.policy.name,
            cpu_ms=max(0, cpu_ns - self.cpu0_ns) / 1e6,
            cpu_wait_ms=max(0, wait_ns - self.wait0_ns) / 1e6,
            loop_late_ms=self.late_s * 1e3,
            suspect=suspect,
            skipped_scatter=self.skipped[wire.SCATTER],
            skipped_gather=self.skipped[wire.GATHER],
            passes_scatter=rs.passes(wire.SCATTER),
            passes_gather=rs.passes(wire.GATHER),
        )
        self.sent_bytes = self.nacks = self.retx = 0
        self.skipped = [0, 0]
        self.reasons = Counter()
        req = self.active_req
        out = rs.out
        # Keep only what NACK answers need.
        rs.partial = rs.out = None  # type: ignore[assignment]
        rs.sc_got, rs.ga_got = {}, {}
        rs.sc.got, rs.ga.got = {}, {}
        self.history[rs.round] = rs
        while len(self.history) > HISTORY:
            self.history.popitem(last=False)
        self.active = self.active_req = None
        self.inject = self.cfg.drop > 0
        assert req is not None
        req.result = (out, stats)
        req.done.set()
