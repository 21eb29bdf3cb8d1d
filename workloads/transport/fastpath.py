"""The data path's compiled routines (fastpath.c, built by cffi at install), bound to one
engine: `RxFast` on its receive ring and active round, `TxFast` on its send batches.

Receive. Per datagram, the Python path decodes a header, checks the sender, finds the round and
adds the payload: ~10 Python-level operations and a few numpy calls each. `RxFast.take` does
that for the whole recvmmsg batch in one C call and returns the datagrams it did not take
(NACKs, other rounds, anything suspect), which the engine hands to its Python path as before.
That path stays the specification: the C side takes only what the Python side would accept,
and the rest is decoded and counted there, reason by reason.

Send. Per packet, `Engine._stage_data` packs a header and points two iovecs (a few ctypes field
writes and a struct pack). `TxFast.stage` stages a run of consecutive packets of one first
transmission, all the pacer allows the peer this pass, in one C call.

Optional by design: without the built module (a checkout used without `pip install`, a machine
with no C compiler) or on a big-endian host, `available()` is False and the engine runs Python
only.
"""

from __future__ import annotations

import struct
import sys

import numpy as np

from workloads.transport import wire
from workloads.transport.mmsg import RecvRing, SendBatch
from workloads.transport.roundstate import STAGE_DONE, STAGE_DRAIN, STAGE_SCATTER, RoundState

try:
    from workloads.transport._fastpath import ffi, lib
except ImportError:  # not built: the Python path alone
    ffi = lib = None

__all__ = ["RxFast", "TxFast", "available"]

NOT_BUILT = "workloads.transport._fastpath is not built (pip install -e . compiles it)"


def wire_layout() -> dict[str, int]:
    """wire.py's header as fastpath.h names it: its size, each field's byte offset and the
    constants the C code tests."""
    fmt = wire.HEADER.format
    out = {"WIRE_HEADER_BYTES": wire.HEADER_BYTES}
    for i, name in enumerate(wire.Header._fields):
        out["WIRE_OFF_" + name.upper()] = struct.calcsize(fmt[: i + 1])
    for name in ("MAGIC", "VERSION", "DATA", "FLAG_LAST", "DATA_FLAGS"):
        out["WIRE_" + name] = getattr(wire, name)
    return out


def check_layout(compiled) -> None:
    """Fail if the built module reads the header differently from wire.py: the C code has the
    layout written in fastpath.h, and a change to wire.HEADER must not go unnoticed there."""
    theirs = {name: getattr(compiled, name, None) for name in wire_layout()}
    wrong = {k: (v, theirs[k]) for k, v in wire_layout().items() if theirs[k] != v}
    if wrong:
        raise ImportError(
            "workloads.transport._fastpath disagrees with wire.py on the header (name: wire.py, "
            f"C): {wrong}; fix fastpath.h, or rebuild a stale build (pip install -e .)"
        )


if lib is not None:
    check_layout(lib)


def available() -> bool:
    """True if the compiled path can run here (built, and a little-endian host like the wire)."""
    return lib is not None and sys.byteorder == "little"


def _ptr(ctype: str, arr: np.ndarray):
    return ffi.cast(ctype, arr.ctypes.data)


class RxFast:
    """One engine's compiled receive path: its constants set once, its round bound per round."""

    def __init__(
        self,
        ring: RecvRing,
        world: int,
        me: int,
        per_pkt: int,
        max_bytes: int,
        job_token: int,
        expect: list[list[int]],
    ) -> None:
        if not available():
            raise RuntimeError(
                "the compiled receive path (workloads.transport._fastpath) is not built"
            )
        self.world = world
        self.r = r = ffi.new("rx_round *")
        r.job_token, r.world, r.me, r.per_pkt, r.max_bytes = (
            job_token, world, me, per_pkt, max_bytes
        )  # fmt: skip
        # Everything C points into is held here, so it lives as long as the struct.
        self._expect = [np.asarray(keys, dtype=np.uint64) for keys in expect]
        self._expect_ptrs = [_ptr("uint64_t *", a) for a in self._expect]
        self.budget = np.zeros(world, dtype=np.uint32)
        self.sc_last = np.zeros(world, dtype=np.uint8)
        self.ga_last = np.zeros(world, dtype=np.uint8)
        self.seen = (np.zeros(world, dtype=np.uint8), np.zeros(world, dtype=np.uint8))
        r.sc_seen, r.ga_seen = (_ptr("uint8_t *", a) for a in self.seen)
        #: called as on_seen(rs, src, stage) the first time a round takes DATA of a stage
        #: from src (the engine's Repairs._moved_on), as the Python path does
        self.on_seen = lambda rs, src, stage: None
        #: called as on_count(reason, n) for datagrams dropped here (duplicates), so the
        #: engine counts them by the reason its Python path would give
        self.on_count = lambda why, n: None
        r.budget_us = _ptr("uint32_t *", self.budget)
        r.sc_last = _ptr("uint8_t *", self.sc_last)
        r.ga_last = _ptr("uint8_t *", self.ga_last)
        self._sc_got = ffi.new("uint8_t *[]", world)
        self._ga_got = ffi.new("uint8_t *[]", world)
        r.sc_got, r.ga_got = self._sc_got, self._ga_got
        self.slow = np.zeros(ring.slots, dtype=np.int32)
        self._slow = _ptr("int32_t *", self.slow)
        bufs, slot, msgs, stride, len_off, names, name_stride = ring.geometry()
        cast = ffi.cast
        self._ring = (cast("uint8_t *", bufs), slot, cast("uint8_t *", msgs), stride, len_off,
                      cast("uint8_t *", names), name_stride)  # fmt: skip
        self.rs: RoundState | None = None
        self._geom: tuple[np.ndarray, ...] = ()

    def bind(self, rs: RoundState) -> None:
        """Point the struct at this round's arrays (all allocated when the round began)."""
        r, lay = self.r, rs.layout
        for a in (rs.partial, rs.out):
            if a.dtype != np.float32 or not a.flags.c_contiguous:
                raise ValueError("the compiled receive path needs contiguous float32 buffers")
        self._geom = tuple(
            np.array([f(j) for j in range(self.world)], dtype=np.uint32)
            for f in (lay.start, lay.length, lay.npkts)
        )
        r.start, r.length, r.npkts = (_ptr("uint32_t *", a) for a in self._geom)
        r.round, r.eps_id = rs.round & 0xFFFFFFFF, rs.eps_id & 0xFFFFFFFF
        r.sc_bound, r.ga_bound = rs.bounds
        r.rx_bytes = _ptr("uint64_t *", rs.rx_bytes)
        r.partial = _ptr("float *", rs.partial)
        r.sc_count = _ptr("int32_t *", rs.sc_count)
        r.out = _ptr("float *", rs.out)
        for a in (self.budget, self.sc_last, self.ga_last, *self.seen):
            a[:] = 0  # per round, as the round's own dict and sets are
        r.news = 0
        for p in range(self.world):
            sc, ga = rs.sc_got.get(p), rs.ga_got.get(p)
            self._sc_got[p] = ffi.NULL if sc is None else _ptr("uint8_t *", sc)
            self._ga_got[p] = ffi.NULL if ga is None else _ptr("uint8_t *", ga)
        self.rs = rs

    def take(self, sock: int, n: int, rs: RoundState, now: float) -> np.ndarray:
        """Take what it can of the `n` datagrams the ring holds from socket `sock`, for round
        `rs` at time `now`; return the slot indices left for the Python path.

        Called once per recvmmsg batch, which holds a few datagrams: the Python work here is
        kept to a few field reads unless something new happened."""
        if rs is not self.rs:
            self.bind(rs)
        r = self.r
        r.expect = self._expect_ptrs[sock]
        r.scatter_open = rs.stage == STAGE_SCATTER
        r.gather_open = rs.stage not in (STAGE_DRAIN, STAGE_DONE)
        nslow = lib.rx_take(r, *self._ring, n, self._slow)
        if r.pkts or r.dups:
            self._apply(rs, now)
        return self.slow[:nslow]

    def _apply(self, rs: RoundState, now: float) -> None:
        """Fold what the accepted datagrams did into the round, as `RoundState.accept` does."""
        r = self.r
        if r.sc_elems:
            rs.sc.received += r.sc_elems
            rs.sc.last_rx = now
        if r.ga_elems:
            rs.ga.received += r.ga_elems
            rs.ga.last_rx = now
        rs.pkts_received += r.pkts
        rs.eps_mismatch += r.eps_mismatch
        if r.dups:
            self.on_count("duplicate", r.dups)
        r.sc_elems = r.ga_elems = r.pkts = r.eps_mismatch = r.dups = 0
        if r.news:
            r.news = 0
            budgets = rs.sc.peer_budgets_s  # one dict, shared by both stages
            for src in np.flatnonzero(self.budget).tolist():
                budgets[src] = int(self.budget[src]) / 1e6
            for stage, seen in enumerate(self.seen):
                for src in np.flatnonzero(seen).tolist():
                    if (src, stage) not in rs.moved_on:
                        self.on_seen(rs, src, stage)
            stages = ((self.sc_last, rs.sc, rs.sc_last), (self.ga_last, rs.ga, rs.ga_last))
            for flags, prog, last in stages:
                for src in np.flatnonzero(flags).tolist():
                    if src not in last:
                        last.add(src)
                        prog.last_seen += 1


class TxFast:
    """One engine's compiled send staging over its per-socket batches."""

    def __init__(self, batches: list[SendBatch], job_token: int, me: int, per_pkt: int) -> None:
        if not available():
            raise RuntimeError(
                "the compiled data path (workloads.transport._fastpath) is not built"
            )
        self.job_token, self.me, self.per_pkt = job_token, me, per_pkt
        self.batches = batches
        if any(b.hdrs.shape[1] != wire.HEADER_BYTES for b in batches):
            raise ValueError("tx_stage writes header slots of wire.HEADER_BYTES")
        cast = ffi.cast
        self._geom = [
            (cast("void *", msgs), cast("void *", iov), cast("uint8_t *", hdrs),
             [cast("void *", a) for a in names])
            for msgs, iov, hdrs, names in (b.geometry() for b in batches)
        ]  # fmt: skip
        self.tmpl = np.zeros(wire.HEADER_BYTES, dtype=np.uint8)
        self._tmpl = cast("uint8_t *", self.tmpl.ctypes.data)

    def stage(self, sock: int, job, m: int, budget_us: int) -> int:
        """Stage the next m packets of `job` (a first transmission: indices a range) into socket
        `sock`'s batch; return their payload bytes. The caller advances job.pos."""
        first, last = job.indices[job.pos], len(job.indices) - 1
        assert job.first and first == job.pos, (job.first, first, job.pos)
        return self._stage(sock, job, first, m, budget_us, 0, last)

    def stage_repairs(self, sock: int, job, m: int, budget_us: int) -> int:
        """Stage packets i .. i+m-1 of the shard, i = job.indices[job.pos], for a repair job
        whose next m indices are those consecutive packets (FLAG_REPAIR, never FLAG_LAST)."""
        first = job.indices[job.pos]
        assert not job.first and job.indices[job.pos + m - 1] == first + m - 1
        return self._stage(sock, job, first, m, budget_us, wire.FLAG_REPAIR, 0xFFFFFFFF)

    def _stage(self, sock: int, job, first: int, m: int, budget_us: int, flags: int,
               last: int) -> int:  # fmt: skip
        batch = self.batches[sock]
        msgs, iov, hdrs, names = self._geom[sock]
        rs, k0 = job.rs, batch.n
        wire.pack_header_into(self.tmpl, wire.DATA, job.stage, flags, self.job_token, rs.round,
                              self.me, job.shard, 0, 0, rs.eps_id, budget_us)  # fmt: skip
        n_elems = job.src.size // 4
        # tx_stage has no bounds checks; this is what it relies on: m slots left in the batch
        # and the m packets (packet i at i x per_pkt) all inside the shard; FLAG_LAST goes on
        # packet `last` only (a first transmission's final one).
        assert 1 <= m <= batch.slots - k0 and (first + m - 1) * self.per_pkt < n_elems, (
            m, k0, batch.slots, first, n_elems,
        )  # fmt: skip
        payload = ffi.cast("uint8_t *", job.addr)
        nbytes = lib.tx_stage(msgs, iov, hdrs, k0, m, names[job.peer], payload, first,
                              self.per_pkt, n_elems, self._tmpl, last)  # fmt: skip
        batch.n = k0 + m
        return nbytes
