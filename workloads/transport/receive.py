"""The engine's receive side: drain a socket, check each datagram, route it to its round.

A mixin of `Engine` (engine.py), the one thread that owns every attribute it reads: the
endpoint's ring, the active round and the finished ones, the buffer of early datagrams and the
per-reason counters. NACK, PROBE and STOP it routes to the repair side (repair.py), whether
they came as datagrams or as frames of a TCP control link (control.py).
"""

from __future__ import annotations

import time

import numpy as np

from workloads.transport import wire

FUTURE = 2  # rounds ahead of this rank whose datagrams are buffered until it gets there
PENDING_MAX_BYTES = 64 << 20
RECV_BATCH = 512


class Receiver:
    """Engine's receive methods (see the module docstring for the state they share)."""

    def _drain(self, i: int) -> None:
        """Read socket i until it is empty (or RECV_BATCH datagrams): one recvmmsg per batch,
        the compiled path taking what it can of it, the Python path the rest (or all).
        i >= k: the control link of peer i - k."""
        if i >= self.ep.k:
            self._drain_link(i - self.ep.k)
            return
        ring, fd, slots = self.ep.ring, self.ep.socks[i].fileno(), self.ep.ring.slots
        fast = self.rx if not self.inject else None  # injected loss is the Python path's
        one, clock = self._one, time.monotonic
        got = 0
        while got < RECV_BATCH:
            rs = self.active
            if fast is not None and rs is not None:
                n = ring.recv_count(fd)
                if n is None:
                    continue  # a queued ICMP error, not a datagram
                left = fast.take(i, n, rs, clock())
                if len(left):
                    lens, keys = ring.lens(), ring.source()
                    for k in left.tolist():
                        one(i, k, int(lens[k]), int(keys[k]))
            else:
                batch = ring.recv(fd)
                if batch is None:
                    continue
                lens_, keys_ = batch
                n = len(lens_)
                for k in range(n):
                    if lens_[k]:  # an empty datagram carries nothing, not even a header
                        one(i, k, lens_[k], keys_[k])
            if n < slots:
                return
            got += n

    def _one(self, i: int, k: int, n: int, key: int) -> None:
        """The Python path for the datagram of n bytes in slot k, from socket i's `key`."""
        if self.inject and self.rng.random() < self.cfg.drop:
            self.reasons["injected"] += 1
            return
        buf, view = self.ep.ring.views[k]
        h = self.decode(view, n)
        if h.__class__ is str:
            self.reasons[h] += 1
        elif key != self.expect[i][h.src]:
            self.reasons["source"] += 1  # not the member the header names
        else:
            self._dispatch(h, buf, view, n, time.monotonic())

    def _drain_link(self, peer: int) -> None:
        """Every whole frame the control link of `peer` holds, each checked as a datagram."""
        frames = self.links.recv(peer)
        if frames is None:  # the peer closed its end (it is shutting down): stop watching
            self.ep.unwatch(self.links.socks[peer].fileno())
            return
        for raw in frames:
            view = memoryview(raw)
            h = self.decode(view, len(raw))
            if h.__class__ is str:
                self.reasons[h] += 1
            elif h.src != peer or h.kind == wire.DATA:
                self.reasons["source"] += 1  # data never comes this way
            else:
                buf = np.frombuffer(raw, dtype=np.uint8)
                self._dispatch(h, buf, view, len(raw), time.monotonic(), tcp=True)

    def _dispatch(
        self,
        h: wire.Header,
        buf: np.ndarray,
        view: memoryview,
        n: int,
        now: float,
        tcp: bool = False,
    ) -> None:
        """Route a datagram (or a control frame, `tcp`) that passed decode and the source
        check to its round."""
        rs = self.active
        if h.kind == wire.PROBE and not tcp:
            self.reasons["kind"] += 1  # a probe travels over the TCP link only
            return
        if rs is not None and h.round == rs.round:
            rs.rx_bytes[h.src] += n
            if h.kind == wire.DATA:
                why = rs.accept(h, buf, now, self.body)
                if why is None:
                    if (h.src, h.stage) not in rs.moved_on:
                        self._moved_on(rs, h.src, h.stage)
                else:
                    self.reasons[why] += 1
                    if why == "late":
                        self._restop(rs, h, now)
            else:
                self._on_control(rs, h, view, tcp, finished=False)
            return
        if h.round in self.history:
            self.history[h.round].rx_bytes[h.src] += n
            if h.kind == wire.DATA:
                self.reasons["late"] += 1
                self._restop(self.history[h.round], h, now)
            else:
                self._on_control(self.history[h.round], h, view, tcp, finished=True)
            return
        if self.next_round <= h.round <= self.next_round + FUTURE:
            if h.kind == wire.NACK:
                self.reasons["unknown_round"] += 1  # we send it all once we get there
            elif self.pending_bytes + n > PENDING_MAX_BYTES:
                self.reasons["pending_overflow"] += 1
            else:  # DATA, and a STOP or PROBE that came before this rank began the round
                self.pending.setdefault(h.round, []).append((bytes(view[:n]), tcp))
                self.pending_bytes += n
            return
        self.reasons["round_window"] += 1

    def _on_control(self, rs, h: wire.Header, view: memoryview, tcp: bool, finished: bool) -> None:
        if h.kind == wire.NACK:
            self._on_nack(rs, h, view, tcp)
        elif h.kind == wire.STOP:
            self._on_stop(rs, h)
        else:
            self._on_probe(rs, h, finished)
