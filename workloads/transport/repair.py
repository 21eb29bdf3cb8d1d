"""The engine's repair side: asking peers for what is missing (NACKs out) and answering their
NACKs with repair packets, both bounded, so a NACK cannot be turned into an amplifier; and the
stop rule's messages: STOP (a receiver ended a stage: send no more of it) and, with
`--control tcp`, PROBE (a sender finished a pass: the receiver answers with its bitmap or STOP).

Control messages travel as the round's policy says (`control`): as UDP datagrams, where a lost
NACK is sent again each hold while the stage is open and idle, and a lost STOP again when more
of the stopped stage arrives (at most once per idle gap); or as frames on the TCP link of the
peer pair (control.py), which delivers them. A NACK over TCP has no repair budget: the link is
authenticated at setup, and its answers are paced passes, one per probe.

A mixin of `Engine` (engine.py), the one thread that owns the round state, the send queues,
the pacer and the counters it reads and writes.
"""

from __future__ import annotations

import numpy as np

from workloads.transport import wire
from workloads.transport.nacks import nack_packets
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.roundstate import (
    STAGE_DONE,
    STAGE_DRAIN,
    STAGE_SCATTER,
    RoundState,
    SendJob,
    within_quota,
)

#: Repair packets a rank sends one peer for one (round, stage), per packet of the shard: enough
#: for many NACK rounds at heavy loss, never an open-ended answer to NACKs.
REPAIR_FACTOR = 8
#: Repair bytes a rank sends one peer in one round, per byte received from it in that round.
AMPLIFICATION = 3


class Repairs:
    """Engine's NACK methods (see the module docstring for the state they share)."""

    def _on_nack(self, rs: RoundState, h: wire.Header, view: memoryview, tcp: bool = False) -> None:
        """Queue repairs of what a NACK names, first vetted (nacks.py), then cut three ways:
        packets already waiting in a repair job or not yet sent once are skipped; at most
        REPAIR_FACTOR x the shard per (round, stage) and peer; and the repairs to a peer in a
        round never exceed AMPLIFICATION x the bytes received from it in that round (QUIC's
        anti-amplification rule; a rank that owns nothing, a parameter server's worker, is
        credited in the scatter with what it owes), so a NACK storm buys its sender little. A
        NACK over TCP (`--control tcp`) comes from the peer itself, answering our probe: no 3x
        rule."""
        q, lay = h.src, rs.layout
        if (q, h.stage) in rs.stopped:
            return  # the receiver ended that stage; an older NACK of it asks for nothing now
        if (q, h.stage) in rs.left:
            self.reasons["late"] += 1  # q has moved on (`_moved_on`): stale, or forged
            return
        if h.stage == wire.SCATTER:
            shard, arr, start = q, rs.data, lay.start(q)
        else:
            if rs.reduced is None:
                self.reasons["unknown_round"] += 1  # our gather has not begun; it will come
                return
            shard, arr, start = self.me, rs.reduced, 0
        n, npkts = lay.length(shard), lay.npkts(shard)
        asked = nack_packets(view, h.count, self.body, n, lay.per_pkt, npkts)
        if isinstance(asked, str):
            self.reasons[asked] += 1
            return
        key = (q, h.stage)
        first = rs.first_jobs.get(key)
        if first is not None and first.unsent(first.pos):
            asked[first.pos :] = False  # the first transmission has still to send these
        queued = rs.repairs_queued.get(key)
        if queued is None:
            queued = rs.repairs_queued[key] = np.zeros(npkts, dtype=bool)
        want = np.flatnonzero(asked & ~queued)
        if not len(want):
            return
        budget = npkts if tcp else REPAIR_FACTOR * npkts - rs.repairs_sent.get(key, 0)
        pkt_bytes = self.body + 4 * lay.per_pkt
        if tcp:
            # over the pair's TCP link, which a spoofed source cannot enter: the peer itself
            # asks, so it is not amplification (at loss L >= 2/3 the 3x rule would starve a
            # stage whose peer receives a third of what it is sent, and the round never ends)
            earned = budget
        else:
            credit = int(rs.rx_bytes[q])
            if h.stage == wire.SCATTER and lay.length(self.me) == 0:
                # a rank that owns nothing (a parameter server's worker) hears nothing in the
                # scatter it owes in full: what it owes is its credit there
                credit = max(credit, npkts * pkt_bytes)
            earned = (AMPLIFICATION * credit - int(rs.repair_bytes[q])) // pkt_bytes
        if len(want) > min(budget, earned):
            self.reasons["repair_budget" if budget <= earned else "amplification"] += 1
            want = want[: max(0, min(budget, earned))]
            if not len(want):
                return
        queued[want] = True
        rs.repairs_sent[key] = rs.repairs_sent.get(key, 0) + len(want)
        rs.repair_bytes[q] += len(want) * pkt_bytes
        src = arr[start : start + n].view(np.uint8)
        job = SendJob(q, rs, h.stage, shard, src, want.tolist(), first=False, addr=src.ctypes.data)
        self._queue_repair(job, first)

    def _queue_repair(self, job: SendJob, first: SendJob | None) -> None:
        """Ahead of everything queued for the peer, except the first transmission of the same
        stage while it is still under way: the receiver needs all of that stage either way,
        and repairs it asks for (or a forger asks for in its name) never hold it back."""
        dq = self.queues[job.peer]
        if first is not None and not first.cancelled and first.pos < len(first.indices):
            for k, queued in enumerate(dq):
                if queued is first:
                    dq.insert(k + 1, job)
                    return
        dq.appendleft(job)

    def _send_nacks(self, rs: RoundState, stage: int, now: float) -> None:
        """Ask each peer not held back for what it owes, as much as the policy wants."""
        t = rs.timing
        prog = rs.sc if stage == wire.SCATTER else rs.ga
        owed = {
            p: r
            for p in self.peers
            if now >= rs.nack_hold.get((p, stage), 0.0) and (r := rs.missing_ranges(stage, p))
        }
        quota = rs.policy.repair_elems(prog)
        for p, ranges in within_quota(owed, quota, rs.layout.per_pkt).items():
            if not ranges:
                continue
            key = (p, stage)
            ranges = ranges[: self.max_ranges]
            pkts = sum(-(-c // rs.layout.per_pkt) for _, c in ranges)
            shard = self.me if stage == wire.SCATTER else p
            hdr = wire.Header(
                wire.MAGIC,
                wire.VERSION,
                wire.NACK,
                stage,
                0,
                self.job_token,
                rs.round,
                self.me,
                shard,
                0,
                len(ranges),
                rs.eps_id,
                0,
            )
            dgram = self._sealed(wire.encode(hdr, wire.nack_payload(ranges)))
            self.sock_rr = (self.sock_rr + 1) % self.ep.k
            if self.ep.send(self.sock_rr, p, memoryview(dgram)):
                self.nacks += 1
            self.pacer.consume(p, len(dgram) + WIRE_OVERHEAD)
            rs.nack_hold[key] = now + 2 * t.gap_s + pkts * t.pair_pkt_s
            rs.asks[key] = rs.asks.get(key, 0) + 1

    # ---- the stop rule and the TCP control channel ---------------------------------------------

    def _sealed(self, dgram: bytes) -> bytes:
        """A control datagram as this job sends it: with its MAC when integrity is on."""
        return dgram if self.mac is None else self.mac.seal(dgram)

    def _control_send(self, rs: RoundState, peer: int, dgram: bytes) -> bool:
        """One control message to `peer`, on the channel the round's policy uses."""
        if rs.policy.control == "tcp" and self.links is not None:
            return self.links.send(peer, dgram)
        self.sock_rr = (self.sock_rr + 1) % self.ep.k
        self.pacer.consume(peer, len(dgram) + WIRE_OVERHEAD)
        return self.ep.send(self.sock_rr, peer, memoryview(dgram))

    def _send_stops(self, rs: RoundState, stage: int, now: float) -> None:
        """The stage is over here: tell each peer that still owes some of it to stop."""
        for p in self.peers:
            if rs.missing_ranges(stage, p):
                self._say_stop(rs, p, stage, now)

    def _say_stop(self, rs: RoundState, peer: int, stage: int, now: float) -> None:
        shard = self.me if stage == wire.SCATTER else peer
        dgram = self._sealed(
            wire.control_datagram(
                wire.STOP, stage, self.job_token, rs.round, self.me, shard, rs.eps_id
            )
        )
        self._control_send(rs, peer, dgram)
        rs.stop_sent[(peer, stage)] = now

    def _restop(self, rs: RoundState, h: wire.Header, now: float) -> None:
        """More DATA of a stage this rank stopped: the STOP (a datagram) was lost; send it
        again, at most once per idle gap."""
        key = (h.src, h.stage)
        sent = rs.stop_sent.get(key)
        if sent is not None and rs.policy.control == "udp" and now - sent >= rs.timing.gap_s:
            self._say_stop(rs, h.src, h.stage, now)

    def _moved_on(self, rs: RoundState, q: int, stage: int) -> None:
        """Round `rs` took its first DATA of `stage` from q: q has left every earlier stage
        (its gather begins when its scatter ends, and a rank starts a round once the previous
        one is over), so repairs still queued for those are dropped and their NACKs, stale or
        forged, are no longer answered. A NACK storm then costs nothing past the stage it
        names. First transmissions go on (only a STOP ends those)."""
        rs.moved_on.add((q, stage))
        if stage == wire.GATHER:
            self._peer_left(rs, q, wire.SCATTER)
        for old in self.history.values():
            if old.round < rs.round:
                self._peer_left(old, q, wire.SCATTER)
                self._peer_left(old, q, wire.GATHER)

    def _peer_left(self, rs: RoundState, q: int, stage: int) -> None:
        if (q, stage) in rs.left:
            return
        rs.left.add((q, stage))
        for job in self.queues[q]:
            if not job.first and job.rs is rs and job.stage == stage:
                job.cancelled = True
        rs.repairs_queued.pop((q, stage), None)

    def _on_stop(self, rs: RoundState, h: wire.Header) -> None:
        """The receiver `h.src` ended stage `h.stage`: cancel what this rank still had to send
        it of that stage (first transmission and repairs) and count those bytes as skipped."""
        q, stage = h.src, h.stage
        if (q, stage) in rs.stopped:
            return
        rs.stopped.add((q, stage))
        per = rs.layout.per_pkt
        for job in [rs.first_jobs.get((q, stage)), *self.queues[q]]:
            if job is None or job.cancelled or job.rs is not rs or job.stage != stage:
                continue
            n = job.src.size // 4
            left = sum(min(per, n - i * per) for i in job.indices[job.pos :])
            self.skipped[stage] += 4 * left
            job.cancelled = True
        rs.repairs_queued.pop((q, stage), None)

    def _on_probe(self, rs: RoundState, h: wire.Header, finished: bool) -> None:
        """Sender `h.src` finished a pass of stage `h.stage`: answer STOP if the stage is over
        here, else the bitmap of what it still owes (as much as the policy asks for)."""
        p, stage = h.src, h.stage
        over = stage == wire.SCATTER and rs.stage != STAGE_SCATTER
        if finished or over or rs.stage in (STAGE_DRAIN, STAGE_DONE):
            self._say_stop(rs, p, stage, 0.0)
            return
        prog = rs.sc if stage == wire.SCATTER else rs.ga
        quota = rs.policy.repair_elems(prog)
        if quota == 0:
            return  # nothing is due: the stage ends by its rule, and then says STOP
        owed = {q: r for q in self.peers if (r := rs.missing_ranges(stage, q))}
        ranges = within_quota(owed, quota, rs.layout.per_pkt).get(p)
        if not ranges:
            return
        shard = self.me if stage == wire.SCATTER else p
        for i in range(0, len(ranges), self.max_ranges):
            part = ranges[i : i + self.max_ranges]
            dgram = self._sealed(wire.control_datagram(
                wire.NACK, stage, self.job_token, rs.round, self.me, shard, rs.eps_id,
                wire.nack_payload(part), len(part),
            ))  # fmt: skip
            if self.links.send(p, dgram):
                self.nacks += 1
        rs.asks[(p, stage)] = rs.asks.get((p, stage), 0) + 1

    def _probe(self, job: SendJob) -> None:
        """A pass of `job` (first transmission or repairs) is sent: ask the receiver what is
        still missing (--control tcp only; call after the pass's datagrams left)."""
        rs = job.rs
        if (job.peer, job.stage) in rs.stopped:
            return
        dgram = self._sealed(
            wire.control_datagram(
                wire.PROBE, job.stage, self.job_token, rs.round, self.me, job.shard, rs.eps_id
            )
        )
        self.links.send(job.peer, dgram)
