"""The engine's repair side: asking peers for what is missing (NACKs out) and answering their
NACKs with repair packets, both bounded, so a NACK cannot be turned into an amplifier.

A mixin of `Engine` (engine.py), the one thread that owns the round state, the send queues,
the pacer and the counters it reads and writes.
"""

from __future__ import annotations

import numpy as np

from workloads.transport import wire
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.roundstate import RoundState, SendJob, within_quota

#: Repair packets a rank sends one peer for one (round, stage), per packet of the shard: enough
#: for many NACK rounds at heavy loss, never an open-ended answer to NACKs.
REPAIR_FACTOR = 8


class Repairs:
    """Engine's NACK methods (see the module docstring for the state they share)."""

    def _on_nack(self, rs: RoundState, h: wire.Header, view: memoryview) -> None:
        q, lay = h.src, rs.layout
        if h.stage == wire.SCATTER:
            shard, arr, start = q, rs.data, lay.start(q)
        else:
            if rs.reduced is None:
                self.reasons["unknown_round"] += 1  # our gather has not begun; it will come
                return
            shard, arr, start = self.me, rs.reduced, 0
        n = lay.length(shard)
        ranges = wire.nack_ranges(view, h.count)
        if any(cnt == 0 or off % lay.per_pkt or off + cnt > n for off, cnt in ranges):
            self.reasons["nack_range"] += 1
            return
        key = (q, h.stage)
        budget = REPAIR_FACTOR * lay.npkts(shard) - rs.repairs_sent.get(key, 0)
        first = rs.first_jobs.get(key)
        # Packets the first transmission has still to send (index >= its pos) are not repaired.
        cut = first.pos if first is not None and first.unsent(first.pos) else None
        queued = rs.repairs_queued.setdefault(key, set())
        want: list[int] = []
        per = lay.per_pkt
        for off, cnt in ranges:
            end = -(-(off + cnt) // per)
            for i in range(off // per, end if cut is None else min(end, cut)):
                if i not in queued:
                    if len(want) >= budget:
                        self.reasons["repair_budget"] += 1
                        break
                    queued.add(i)
                    want.append(i)
        if want:
            rs.repairs_sent[key] = rs.repairs_sent.get(key, 0) + len(want)
            src = arr[start : start + n].view(np.uint8)
            job = SendJob(q, rs, h.stage, shard, src, want, first=False, addr=src.ctypes.data)
            self.queues[q].appendleft(job)

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
            dgram = wire.encode(hdr, wire.nack_payload(ranges))
            self.sock_rr = (self.sock_rr + 1) % self.ep.k
            if self.ep.send(self.sock_rr, p, memoryview(dgram)):
                self.nacks += 1
            self.pacer.consume(p, len(dgram) + WIRE_OVERHEAD)
            rs.nack_hold[key] = now + 2 * t.gap_s + pkts * t.pair_pkt_s
