"""The compiled receive path against the Python one, on real loopback sockets (no root).

Two receivers of rank 0, one with `fastpath` and one without, get the same datagrams from
the same peer sockets: valid scatter and gather packets of the active round, and the same
packets mutated field by field (token, source, round, shard, count, offset, length, flags,
stage, kind, magic), duplicated, sent from the wrong member's socket, or NACKs. After every
drain the two rounds must hold the same arrays and counters, and the two engines the same
rejection counts: the C side takes only what the Python side accepts.
"""

from __future__ import annotations

import dataclasses
import socket

import numpy as np
import pytest

from workloads.transport import fastpath, wire
from workloads.transport.completion import Dblp
from workloads.transport.config import TransportConfig
from workloads.transport.endpoint import Endpoint
from workloads.transport.engine import Engine
from workloads.transport.layout import Layout
from workloads.transport.roundstate import STAGE_GATHER, RoundState, SendJob, Timing
from workloads.transport.screen import value_bounds

pytestmark = pytest.mark.skipif(
    not fastpath.available(), reason="workloads.transport._fastpath not built"
)

WORLD, ME, MTU, TOKEN, ROUND = 4, 0, 576, 0x1234_5678_9ABC_DEF0, 7
LOCAL = "127.0.0.1"


def _free_base(k: int) -> int:
    """A base port with WORLD*k free UDP ports above it (bound and released)."""
    for base in range(41000, 60000, 397):
        socks = []
        try:
            for p in range(base, base + WORLD * k):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((LOCAL, p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


def _job(compiled: bool, base: int):
    cfg = TransportConfig(mtu=MTU, base_port=base, ports_per_peer=2, fastpath=compiled)
    eps = [Endpoint(r, [LOCAL] * WORLD, cfg) for r in range(WORLD)]
    engine = Engine(ME, WORLD, eps[ME], cfg, TOKEN)  # not started: drained by hand
    assert (engine.rx is not None) == compiled
    lay = Layout(40_000, WORLD, wire.elems_per_packet(MTU))
    t = Timing(t_max_s=1.0, p50_s=0.1, gap_s=0.01, pair_pkt_s=0.001)
    data = np.arange(lay.n, dtype=np.float32) * 0.5
    engine.active = RoundState(ROUND, ME, lay, data, Dblp(), 0.1, 3, 0.0, t)
    engine.next_round = ROUND + 1
    return engine, eps


def _valid(rs: RoundState, rng: np.random.Generator) -> tuple[int, wire.Header, bytes]:
    """A random valid DATA packet of the round: (sending peer, header, payload)."""
    lay = rs.layout
    src = int(rng.integers(1, WORLD))
    stage = int(rng.integers(0, 2))
    shard = ME if stage == wire.SCATTER else src
    i = int(rng.integers(0, lay.npkts(shard)))
    off, cnt = lay.pkt(shard, i)
    flags = wire.FLAG_LAST if i == lay.npkts(shard) - 1 else int(rng.choice([0, wire.FLAG_REPAIR]))
    eps_id = int(rng.choice([3, 4]))
    budget = int(rng.choice([0, 0, 1500, 2500]))
    h = wire.Header(wire.MAGIC, wire.VERSION, wire.DATA, stage, flags, TOKEN, ROUND, src, shard,
                    off, cnt, eps_id, budget)  # fmt: skip
    return src, h, rng.standard_normal(cnt).astype("<f4").tobytes()


MUTATIONS = ("token", "src", "round", "shard", "count", "offset", "flags", "stage", "kind",
             "magic", "version", "short", "long", "wrong_socket", "nack", "future",
             "nan", "huge", "edge")  # fmt: skip


def _mutate(h: wire.Header, payload: bytes, src: int, what: str, rng) -> tuple[int, bytes]:
    """(the rank whose socket sends it, the datagram)."""
    f = h._asdict()
    if what == "token":
        f["job_token"] ^= 1
    elif what == "src":
        f["src"] = int(rng.choice([ME, WORLD, 1 + src % (WORLD - 1)]))
    elif what == "round":
        f["round"] = ROUND - 1
    elif what == "future":
        f["round"] = ROUND + 1
    elif what == "shard":
        f["shard"] = (f["shard"] + 1) % (WORLD + 1)
    elif what == "count":
        f["count"] = int(rng.choice([0, f["count"] - 1, f["count"] + 1]))
    elif what == "offset":
        f["offset"] += int(rng.choice([1, wire.elems_per_packet(MTU), 10**6]))
    elif what == "flags":
        f["flags"] = int(rng.choice([0x04, 0x80]))
    elif what == "stage":
        f["stage"] = 2
    elif what == "kind":
        f["kind"] = 3
    elif what == "magic":
        f["magic"] ^= 0xFF
    elif what == "version":
        f["version"] = 1
    elif what in ("nan", "huge", "edge"):  # screen.py: both paths drop the first two alone
        vals = np.frombuffer(payload, "<f4").copy()
        bound = np.float32(value_bounds(WORLD)[f["stage"]])
        edge = np.nextafter(bound, np.float32(0))
        vals[int(rng.integers(len(vals)))] = {"nan": np.nan, "huge": -bound, "edge": edge}[what]
        payload = vals.tobytes()
    elif what == "nack":
        f.update(kind=wire.NACK, flags=0, offset=0, count=1, timeout_us=0,
                 shard=src if f["stage"] == wire.SCATTER else ME)  # fmt: skip
        payload = wire.RANGE.pack(0, 1)
    datagram = wire.encode(wire.Header(**f), payload)
    if what == "short":
        datagram = datagram[: int(rng.integers(0, len(datagram)))]
    elif what == "long":
        datagram += b"\0\0\0\0"
    if what == "wrong_socket":
        return 1 + src % (WORLD - 1), datagram  # another member's socket, this one's header
    return src, datagram


def _state(engine: Engine) -> dict:
    rs = engine.active
    prog = [dataclasses.asdict(p) for p in (rs.sc, rs.ga)]
    return {
        "partial": rs.partial.tobytes(), "out": rs.out.tobytes(), "sc_count": rs.sc_count.tolist(),
        "sc_got": {p: g.tolist() for p, g in rs.sc_got.items()},
        "ga_got": {p: g.tolist() for p, g in rs.ga_got.items()},
        "prog": [{k: v for k, v in p.items() if k not in ("last_rx", "got")} for p in prog],
        "last": (sorted(rs.sc_last), sorted(rs.ga_last)), "pkts": rs.pkts_received,
        "eps_mismatch": rs.eps_mismatch, "stage": rs.stage,
        "reasons": dict(engine.reasons), "pending": {r: len(v) for r, v in engine.pending.items()},
    }  # fmt: skip


def _drain_all(engine: Engine) -> None:
    for i in range(engine.ep.k):
        engine._drain(i)
        engine._drain(i)  # an empty socket: nothing taken, nothing raised


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_and_python_receive_paths_agree_on_every_datagram(seed):
    rng = np.random.default_rng(seed)
    jobs = [_job(c, _free_base(2) + 10 * c) for c in (False, True)]
    try:
        for batch in range(12):
            if batch == 8:  # the scatter ends: gather packets still count, scatter ones are late
                for engine, _ in jobs:
                    engine.active.end_scatter(0.5, cap_hit=False)
                    assert engine.active.stage == STAGE_GATHER
            sent = []
            for _ in range(40):
                src, h, payload = _valid(jobs[0][0].active, rng)
                what = rng.choice(MUTATIONS) if rng.random() < 0.4 else "valid"
                repeat = 2 if rng.random() < 0.1 else 1  # a duplicate
                sender, dgram = (
                    (src, wire.encode(h, payload))
                    if what == "valid"
                    else _mutate(h, payload, src, what, rng)
                )
                sock = int(rng.integers(0, 2))
                sent += [(sender, sock, dgram)] * repeat
            for engine, eps in jobs:
                for sender, sock, dgram in sent:
                    eps[sender].socks[sock].sendto(dgram, engine.ep.dest[ME][sock])
                _drain_all(engine)
            assert _state(jobs[1][0]) == _state(jobs[0][0]), f"batch {batch}"
        py = _state(jobs[0][0])
        assert py["pkts"] > 150 and sum(py["reasons"].values()) > 50  # both kinds happened
        assert {"duplicate", "job_token", "source", "late", "nonfinite", "overflow"} <= set(
            py["reasons"]
        )
    finally:
        for _, eps in jobs:
            for ep in eps:
                ep.close()


def _snapshot(batch) -> list[tuple]:
    """What each staged slot will send: header bytes, payload pointer and length, destination."""
    out = []
    for k in range(batch.n):
        m = batch._msgs[k].hdr
        iov = batch._iov[2 * k + 1]
        out.append((batch.hdrs[k].tobytes(), iov.base, iov.len, m.name))
    return out


@pytest.mark.parametrize("n_elems", [40_000, 40_001, 127])
def test_compiled_staging_writes_what_the_per_packet_staging_writes(n_elems):
    engine, eps = _job(True, _free_base(2))
    try:
        lay = Layout(n_elems, WORLD, wire.elems_per_packet(MTU))
        t = Timing(t_max_s=1.0, p50_s=0.1, gap_s=0.01, pair_pkt_s=0.001)
        rs = RoundState(ROUND, ME, lay, np.ones(n_elems, np.float32), Dblp(), 0.1, 5, 0.0, t)
        batch = engine.ep.batches[1]
        for peer, stage in ((2, wire.SCATTER), (3, wire.GATHER)):
            shard = peer if stage == wire.SCATTER else ME
            src = rs.data[lay.start(shard) : lay.start(shard) + lay.length(shard)].view(np.uint8)
            npk = lay.npkts(shard)
            for start, m in ((0, min(5, npk)), (max(0, npk - 3), min(3, npk))):  # incl. the last

                def job(peer=peer, stage=stage, shard=shard, src=src, npk=npk, start=start):
                    return SendJob(peer, rs, stage, shard, src, range(npk), first=True,
                                   pos=start, addr=src.ctypes.data)  # fmt: skip

                py, staged = job(), []
                for i in range(start, start + m):
                    engine._stage_data(py, i, 1, staged)
                want = _snapshot(batch)
                batch.n = 0
                nbytes = engine.tx.stage(1, job(), m, rs.policy.header_budget_us())
                assert _snapshot(batch) == want
                assert nbytes == sum(nb for nb, _ in staged)
                flags = [wire.HEADER.unpack_from(h)[4] for h, *_ in want]
                assert (flags[-1] == wire.FLAG_LAST) == (start + m == npk)
                batch.n = 0
                # The same packets as a repair run: FLAG_REPAIR on each, never FLAG_LAST.
                ids = list(range(start, start + m))
                rep = SendJob(peer, rs, stage, shard, src, ids, first=False, addr=src.ctypes.data)
                for i in ids:
                    engine._stage_data(rep, i, 1, [])
                want = _snapshot(batch)
                batch.n = 0
                rep.pos = 0
                engine.tx.stage_repairs(1, rep, m, rs.policy.header_budget_us())
                assert _snapshot(batch) == want
                assert {wire.HEADER.unpack_from(h)[4] for h, *_ in want} == {wire.FLAG_REPAIR}
                batch.n = 0
    finally:
        for ep in eps:
            ep.close()


def test_the_c_header_layout_is_wire_pys():
    """The import-time check passes on the build, and names the field a moved offset breaks."""
    fastpath.check_layout(fastpath.lib)
    moved = dict(fastpath.wire_layout(), WIRE_OFF_SRC=21)
    with pytest.raises(ImportError, match="WIRE_OFF_SRC"):
        fastpath.check_layout(type("Stale", (), moved))
