"""The engine's send side: which peer's packet leaves next (the pacer), staged into the
per-socket batches (Python, or the compiled `TxFast` for first transmissions), one sendmmsg
per socket.

A mixin of `Engine` (engine.py), the one thread that owns the send queues, the pacer, the
endpoint's batches and the byte counters.
"""

from __future__ import annotations

import time

from workloads.transport import wire
from workloads.transport.endpoint import SEND_SLOTS
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.roundstate import SendJob

SEND_BATCH = SEND_SLOTS


class Sender:
    """Engine's send methods (see the module docstring for the state they share)."""

    def _want(self, p: int) -> int | None:
        """Wire bytes of the next packet queued for peer p (dropping finished jobs), or None."""
        dq = self.queues[p]
        while dq and (dq[0].cancelled or dq[0].pos >= len(dq[0].indices)):
            dq.popleft()
        if not dq:
            return None
        job = dq[0]
        cnt = min(self.per_pkt, job.src.size // 4 - job.indices[job.pos] * self.per_pkt)
        return self.body + 4 * cnt + WIRE_OVERHEAD

    def _wants(self) -> dict[int, int]:
        wants = {}
        for p in self.peers:
            w = self._want(p)
            if w is not None:
                wants[p] = w
        return wants

    def _send(self, now: float) -> None:
        """Up to SEND_BATCH packets the pacer lets go now, one sendmmsg per socket used."""
        wants = self._wants()
        if not wants:
            return
        if self.tx is not None:
            self._send_runs(now)
            return
        pacer, queues, want, stage, clock = (
            self.pacer,
            self.queues,
            self._want,
            self._stage_data,
            time.monotonic,
        )
        staged: list[list[tuple[int, bool]]] = [[] for _ in range(self.ep.k)]
        # One socket per peer per pass (rotating), so a pass's packets to a peer leave in one
        # sendmmsg and arrive in one recvmmsg: striping each packet over the k sockets split
        # every batch k ways (3.9 datagrams per call measured). Over a round the k flows still
        # share the data, so ECMP spreads it as before, in runs of one pass each.
        k, tick = self.ep.k, self.passes
        self.passes += 1
        for _ in range(SEND_BATCH):
            p = pacer.next_peer(now, wants)
            if p is None:
                break
            job = queues[p][0]
            i = job.indices[job.pos]
            job.pos += 1
            if job.pos == len(job.indices):
                self._passed(job)
            sock = (tick + p) % k
            stage(job, i, sock, staged[sock])
            pacer.consume(p, wants[p])
            w = want(p)
            if w is None:
                del wants[p]
                if not wants:
                    break
            else:
                wants[p] = w
            now = clock()
        self._flush(staged)

    def _send_runs(self, now: float) -> None:
        """`_send` with the compiled staging: each peer in turn (a rotating first) gets all its
        tokens allow this pass as one run of its first transmission, staged in one C call.
        Per-peer buckets are independent, so each peer gets what its bucket holds at the pass's
        start, as in the per-packet loop (which also refills between packets); the runs are in
        the order sockets are flushed anyway. A repair job goes the same way, one run of
        consecutive packets per C call."""
        pacer, queues, want, tx = self.pacer, self.queues, self._want, self.tx
        pacer.refill(now)
        tokens = pacer.tokens
        k, tick, peers = self.ep.k, self.passes, self.peers
        self.passes += 1
        staged: list[list[tuple[int, bool]]] = [[] for _ in range(k)]
        full = wire.HEADER_BYTES + 4 * self.per_pkt + WIRE_OVERHEAD
        room = SEND_BATCH
        for j in range(len(peers)):
            p = peers[(tick + j) % len(peers)]
            sock = (tick + p) % k
            while room > 0:
                need = want(p)
                if need is None or tokens[p] < need:
                    break
                job = queues[p][0]
                m = min(room, len(job.indices) - job.pos, int(tokens[p] // full)) or 1
                budget = job.rs.policy.header_budget_us()
                if job.first:
                    nbytes = tx.stage(sock, job, m, budget)
                else:  # the run of consecutive packets the repair job has next
                    idx, pos = job.indices, job.pos
                    i0, run = idx[pos], 1
                    while run < m and idx[pos + run] == i0 + run:
                        run += 1
                    m = run
                    nbytes = tx.stage_repairs(sock, job, m, budget)
                    queued = job.rs.repairs_queued.get((p, job.stage))
                    if queued is not None:
                        queued[i0 : i0 + m] = False
                job.pos += m
                if job.pos == len(job.indices):
                    self._passed(job)
                pacer.consume(p, nbytes + m * (wire.HEADER_BYTES + WIRE_OVERHEAD))
                room -= m
                last = nbytes - 4 * self.per_pkt * (m - 1)
                staged[sock] += [(4 * self.per_pkt, job.first)] * (m - 1) + [(last, job.first)]
        self._flush(staged)

    def _passed(self, job: SendJob) -> None:
        """The job's last packet is staged: with --control tcp, probe its receiver once the
        batch has left (`_flush`), so the probe never overtakes the pass it closes."""
        if job.rs.policy.control == "tcp" and self.links is not None:
            self.probes.append(job)

    def _flush(self, staged: list[list[tuple[int, bool]]]) -> None:
        """One sendmmsg per socket with packets staged; count what the kernel took; then the
        probes of the passes this batch ended."""
        for s, pkts in enumerate(staged):
            if pkts:
                for ok, (nb, first) in zip(
                    self.ep.batches[s].flush(self.ep.socks[s].fileno()), pkts, strict=True
                ):
                    if ok:
                        self.sent_bytes += nb
                        if not first:
                            self.retx += 1
        if self.probes:
            for job in self.probes:
                self._probe(job)
            self.probes.clear()

    def _stage_data(self, job: SendJob, i: int, s: int, staged: list[tuple[int, bool]]) -> None:
        """Pack packet i of the job into the send batch of socket s."""
        rs, per = job.rs, self.per_pkt
        off = i * per
        cnt = min(per, job.src.size // 4 - off)
        flags = 0
        if job.first:
            if i == len(job.indices) - 1:
                flags = wire.FLAG_LAST
        else:
            flags = wire.FLAG_REPAIR
            queued = rs.repairs_queued.get((job.peer, job.stage))
            if queued is not None:
                queued[i] = False
        nb = 4 * cnt
        hdr = self.ep.batches[s].add(job.peer, job.addr + 4 * off, nb)
        if self.mac is not None:
            flags |= wire.FLAG_MAC
        wire.pack_header_into(
            hdr,
            wire.DATA,
            job.stage,
            flags,
            self.job_token,
            rs.round,
            self.me,
            job.shard,
            off,
            cnt,
            rs.eps_id,
            rs.policy.header_budget_us(),
        )
        if self.mac is not None:
            self.mac.sign_into(hdr, job.src[4 * off : 4 * off + nb])
        staged.append((nb, job.first))
