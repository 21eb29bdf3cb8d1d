"""The stop rule (--stop early), what stands in for missing data (--fill) and the paper's
control channel's pure parts: per-peer progress, verdicts, repair quotas, the STOP bookkeeping
on the sender side, and the TCP link's framing."""

from __future__ import annotations

import socket
from collections import Counter, deque

import numpy as np
import pytest

from workloads.transport import wire
from workloads.transport.completion import Dblp, Mlt, StageProgress, make_policy
from workloads.transport.config import TransportConfig
from workloads.transport.control import LENGTH, ControlLinks
from workloads.transport.layout import Layout
from workloads.transport.repair import Repairs
from workloads.transport.roundstate import RoundState, SendJob, Timing

PER = 10


def progress(got: dict[int, list[bool]], lengths: dict[int, int], epsilon: float, last_rx=0.0):
    bitmaps = {p: np.array(g, dtype=bool) for p, g in got.items()}
    p = StageProgress(
        round_start=0.0, share=1.0, t_max_s=10.0, p50_s=0.1, gap_s=0.002,
        expected=sum(lengths.values()), peers=len(lengths), last_rx=last_rx,
        got=bitmaps, lengths=lengths, per_pkt=PER, epsilon=epsilon,
    )  # fmt: skip
    p.received = sum(p.lengths[q] - p.peer_missing(q) for q in lengths)
    return p


def test_peer_missing_counts_a_short_last_packet():
    # 25 elements in packets of 10, 10, 5
    p = progress({1: [True, False, True]}, {1: 25}, 0.0)
    assert p.peer_missing(1) == 10
    p = progress({1: [True, True, False]}, {1: 25}, 0.0)
    assert p.peer_missing(1) == 5
    p = progress({1: [False, False, False]}, {1: 25}, 0.0)
    assert p.peer_missing(1) == 25


def test_stop_early_ends_once_every_peer_is_within_epsilon():
    early, idle = Dblp(stop="early"), Dblp(stop="idle")
    # 60 % from each of two peers, ε = 0.4, the stream still busy (last_rx = now)
    p = progress({1: [True] * 6 + [False] * 4, 2: [True] * 6 + [False] * 4}, {1: 100, 2: 100}, 0.4)
    assert early.verdict(p, 0.0).done
    assert not idle.verdict(p, 0.0).done  # idle waits for the stream to go quiet
    # the same total, but one peer has sent only 20 %: not yet (each peer counts)
    p = progress({1: [True] * 10, 2: [True] * 2 + [False] * 8}, {1: 100, 2: 100}, 0.4)
    assert p.missing <= 80
    assert not early.verdict(p, 0.0).done


def test_fill_zero_and_rescale():
    own = np.array([1.0, 2.0], dtype=np.float32)
    for pol, want in ((Dblp(fill="rescale"), [3.0, 6.0]), (Dblp(fill="zero"), [0.0, 0.0])):
        out = np.full(2, 9.0, dtype=np.float32)
        pol.fill_missing(out, own, 3)
        assert out.tolist() == want
    partial = np.array([4.0, 4.0], dtype=np.float32)
    counts = np.array([2, 4])
    Dblp(fill="zero").combine(partial, counts, 4)
    assert partial.tolist() == [4.0, 4.0]  # a missing contribution counts 0
    Dblp(fill="rescale").combine(partial, counts, 4)
    assert partial.tolist() == [8.0, 4.0]


def test_defaults_per_policy_and_bad_values():
    cfg = TransportConfig()
    assert make_policy("dblp", cfg).fill == "rescale"
    assert make_policy("mlt", cfg).fill == "zero"
    assert make_policy("mlt", TransportConfig(fill="rescale")).fill == "rescale"
    assert isinstance(make_policy("mlt", cfg), Mlt)
    for bad in ({"stop": "sometimes"}, {"fill": "mean"}, {"control": "quic"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TransportConfig(**bad)


def test_tcp_control_asks_for_the_whole_bitmap_once_a_repair_is_due():
    half = progress({1: [True] * 5 + [False] * 5}, {1: 100}, 0.2)  # 50 % missing
    assert Dblp(control="udp").repair_elems(half) == 45  # 1.5 x (50 - 20)
    assert Dblp(control="tcp").repair_elems(half) is None  # all of it
    ok = progress({1: [True] * 9 + [False]}, {1: 100}, 0.2)
    assert Dblp(control="tcp").repair_elems(ok) == 0  # nothing due


class _Sender(Repairs):
    """Just the state `_on_stop` reads and writes."""

    def __init__(self, rs: RoundState, jobs: list[SendJob]) -> None:
        self.me, self.peers, self.skipped = 0, [1, 2], [0, 0]
        self.queues = {1: deque(jobs), 2: deque()}
        self.reasons = Counter()


def test_a_stop_cancels_the_stage_and_counts_what_was_skipped():
    lay = Layout(3 * 25, 3, PER)  # shards of 25 elements: packets of 10, 10, 5
    data = np.arange(75, dtype=np.float32)
    rs = RoundState(0, 0, lay, data, Dblp(stop="early"), 0.4, 0, 0.0, Timing(1, 0.1, 0.002, 1e-4))
    src = data[25:50].view(np.uint8)
    first = SendJob(1, rs, wire.SCATTER, 1, src, range(3), first=True, pos=1)
    repair = SendJob(1, rs, wire.SCATTER, 1, src, [0, 2], first=False)
    other = SendJob(1, rs, wire.GATHER, 0, src, range(3), first=True)
    rs.first_jobs[(1, wire.SCATTER)] = first
    eng = _Sender(rs, [repair, first, other])
    stop = wire.Header(wire.MAGIC, wire.VERSION, wire.STOP, wire.SCATTER, 0, 1, 0, 1, 1, 0, 0, 0, 0)
    eng._on_stop(rs, stop)
    assert first.cancelled and repair.cancelled and not other.cancelled
    assert eng.skipped == [4 * (10 + 5) + 4 * (10 + 5), 0]
    eng._on_stop(rs, stop)  # a repeated STOP changes nothing
    assert eng.skipped[wire.SCATTER] == 120


def test_control_frames_split_and_join():
    a, b = socket.socketpair()
    links = ControlLinks.__new__(ControlLinks)
    links.socks, links.bufs = {1: b}, {1: bytearray()}
    msgs = [b"x" * 40, b"y" * 56]
    blob = b"".join(LENGTH.pack(len(m)) + m for m in msgs)
    a.sendall(blob[:45])
    assert links.recv(1) == [msgs[0]]  # the second frame is not whole yet
    a.sendall(blob[45:])
    assert links.recv(1) == [msgs[1]]
    a.close()
    assert links.recv(1) is None
    b.close()
