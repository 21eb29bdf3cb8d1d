"""Completion policies on synthetic arrival sequences: idle gap, quota, NACK ranges, t_max."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.transport import wire
from workloads.transport.completion import (
    REPAIR_MARGIN,
    TAIL_GAPS,
    Dblp,
    OptiReduce,
    Reliable,
    StageProgress,
    idle_gap_s,
)
from workloads.transport.layout import Layout
from workloads.transport.roundstate import RoundState, Timing, missing_runs, within_quota

GAP = 0.002


def progress(
    expected=1000, received=0, last_rx=0.0, last_seen=3, share=1.0, t_max=0.1, p50=0.02, epsilon=0.0
):
    return StageProgress(
        round_start=0.0,
        share=share,
        t_max_s=t_max,
        p50_s=p50,
        gap_s=GAP,
        expected=expected,
        peers=3,
        last_rx=last_rx,
        received=received,
        last_seen=last_seen,
        epsilon=epsilon,
    )


def test_idle_gap_is_max_of_2ms_and_4_packet_times():
    assert idle_gap_s(100, 1500) == pytest.approx(0.002)  # 4 packets = 0.48 ms < 2 ms
    assert idle_gap_s(10, 1500) == pytest.approx(4 * 1514 * 8 / 10e6)  # 4.8 ms
    assert idle_gap_s(1000, 9000) == pytest.approx(0.002)
    # dilated 4x: the rate is / 4 and the floor x 4, so the gap is 4x the undilated one
    assert idle_gap_s(25, 1500, time_scale=4) == pytest.approx(4 * idle_gap_s(100, 1500))
    assert idle_gap_s(2.5, 1500, time_scale=4) == pytest.approx(4 * idle_gap_s(10, 1500))


def test_idle_needs_one_gap_after_every_last_and_more_before():
    pol = Dblp()
    p = progress(epsilon=0.1, received=950, last_rx=0.010, last_seen=3)
    assert not pol.idle(p, 0.010 + GAP * 0.9)
    assert pol.idle(p, 0.010 + GAP)
    p.last_seen = 2  # a sender's tail (or the sender itself) is still out
    assert not pol.idle(p, 0.010 + GAP * (TAIL_GAPS - 0.1))  # p50 = 20 ms: 4 gaps win
    assert pol.idle(p, 0.010 + GAP * TAIL_GAPS)


def test_dblp_quota_and_idle():
    pol = Dblp()
    p = progress(epsilon=0.05, expected=1000, received=960, last_rx=0.010)
    v = pol.verdict(p, 0.011)  # within eps but still streaming: wait for idle
    assert not v.done and not v.nack and v.recheck_at == pytest.approx(0.012)
    v = pol.verdict(p, 0.0125)
    assert v.done and not v.cap_hit
    p.received = 940  # beyond eps once idle: repair
    v = pol.verdict(p, 0.0125)
    assert v.nack and not v.done
    p.received = 1000
    assert pol.verdict(p, 0.0101).done  # everything in: over without waiting


def test_dblp_boundary_is_floor_of_eps_times_expected():
    pol = Dblp()
    p = progress(epsilon=0.05, expected=1000, received=950, last_rx=0.0)
    assert pol.verdict(p, 1.0 * GAP + 1e-6).done
    p.received = 949
    assert pol.verdict(p, GAP + 1e-6).nack


def test_dblp_cap_hit_at_t_max_share():
    pol = Dblp()
    p = progress(epsilon=0.01, expected=1000, received=500, last_rx=0.049, share=0.5, t_max=0.1)
    v = pol.verdict(p, 0.0499)
    assert not v.done and v.recheck_at <= 0.05
    v = pol.verdict(p, 0.05)
    assert v.done and v.cap_hit
    p.received = 995  # within eps at the cap: not a cap hit
    assert not pol.verdict(p, 0.05).cap_hit


def test_reliable_never_ends_with_data_missing():
    pol = Reliable()
    p = progress(expected=10, received=9, last_rx=0.0)
    for t in (0.001, 0.01, 1.0, 100.0):
        v = pol.verdict(p, t)
        assert not v.done
    assert pol.verdict(p, 1.0).nack
    p.received = 10
    assert pol.verdict(p, 0.0).done


def test_optireduce_fixed_waits_for_all_bytes_or_t_max():
    pol = OptiReduce("fixed")
    p = progress(expected=100, received=99, last_rx=0.0, last_seen=3, share=1.0, t_max=0.1)
    v = pol.verdict(p, 0.05)  # every LAST seen and long idle: fixed still waits
    assert not v.done and v.recheck_at == pytest.approx(0.1)
    v = pol.verdict(p, 0.1)
    assert v.done and v.cap_hit and not v.nack


def test_optireduce_adaptive_early_end_after_every_last_and_idle():
    pol = OptiReduce("adaptive")
    p = progress(expected=100, received=90, last_rx=0.010, last_seen=2)
    assert not pol.verdict(p, 0.010 + 3 * GAP).done  # a peer's LAST missing
    p.last_seen = 3
    assert not pol.verdict(p, 0.010 + 0.5 * GAP).done
    v = pol.verdict(p, 0.010 + GAP)
    assert v.done and not v.nack


def test_optireduce_adaptive_budget_median_floor_cap():
    pol = OptiReduce("adaptive")
    p = progress(t_max=0.1, p50=0.02)
    assert pol.budget_s(p) == 0.1  # nothing known yet: t_max
    p.peer_budgets_s.update({1: 0.05, 2: 0.06, 3: 0.07})
    assert pol.budget_s(p) == pytest.approx(0.06)
    p.peer_budgets_s.update({1: 0.01, 2: 0.01, 3: 0.01})
    assert pol.budget_s(p) == pytest.approx(0.04)  # floored at 2 x p50
    p.peer_budgets_s.update({1: 1.0, 2: 1.0, 3: 1.0})
    assert pol.budget_s(p) == pytest.approx(0.1)  # capped at t_max
    pol.observe(0.030, 0.5)  # elapsed / completion + 1 ms
    assert pol.header_budget_us() == 61000
    assert OptiReduce("fixed").header_budget_us() == 0


def test_fill_and_combine_units():
    own = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    out = np.zeros(3, dtype=np.float32)
    OptiReduce().fill_missing(out, own, 4)
    assert np.array_equal(out, own)  # SUM keeps x, so the hook's mean is x / N
    Dblp().fill_missing(out, own, 4)
    assert np.array_equal(out, own * 4)  # SUM = N x, so the hook's mean is x
    partial = np.array([6.0, 6.0, 6.0], dtype=np.float32)
    counts = np.array([4, 3, 2])
    p = partial.copy()
    OptiReduce().combine(p, counts, 4)
    assert np.array_equal(p, partial)  # missing contributions count as 0
    p = partial.copy()
    OptiReduce(rescale=True).combine(p, counts, 4)
    assert np.allclose(p, [6.0, 8.0, 12.0])
    p = partial.copy()
    Dblp().combine(p, counts, 4)
    assert np.allclose(p, [6.0, 8.0, 12.0])  # sum x N / received


def test_missing_runs():
    got = np.array([1, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    assert missing_runs(got) == [(2, 4), (5, 6), (7, 8)]
    assert missing_runs(np.ones(5, dtype=bool)) == []
    assert missing_runs(np.zeros(3, dtype=bool)) == [(0, 3)]


def make_round(n: int, world: int = 4, me: int = 1, per_pkt: int = 10) -> RoundState:
    lay = Layout(n, world, per_pkt)
    t = Timing(t_max_s=0.1, p50_s=0.02, gap_s=GAP, pair_pkt_s=0.0003)
    data = np.arange(n, dtype=np.float32)
    return RoundState(0, me, lay, data, Dblp(), 0.1, 0, 0.0, t)


def feed(rs: RoundState, stage: int, src: int, pkt: int, now: float, last=False):
    lay = rs.layout
    shard = rs.me if stage == wire.SCATTER else src
    off, cnt = lay.pkt(shard, pkt)
    flags = wire.FLAG_LAST if last else 0
    h = wire.Header(wire.MAGIC, 1, wire.DATA, stage, flags, 0, 0, src, shard, off, cnt, 0, 0)
    buf = np.frombuffer(wire.encode(h, np.ones(cnt, "<f4").tobytes()), np.uint8).copy()
    return rs.accept(h, buf, now)


def test_nack_ranges_from_a_synthetic_arrival_sequence():
    rs = make_round(200, per_pkt=10)  # shard 1 = 50 elements = 5 packets (last 10 full)
    assert rs.layout.length(1) == 50 and rs.layout.npkts(1) == 5
    for pkt in (0, 3):
        assert feed(rs, wire.SCATTER, 0, pkt, 0.001) is None
    assert feed(rs, wire.SCATTER, 0, 3, 0.002) == "duplicate"
    assert rs.missing_ranges(wire.SCATTER, 0) == [(10, 20), (40, 10)]
    assert rs.missing_ranges(wire.SCATTER, 2) == [(0, 50)]
    assert rs.sc.received == 20 and rs.sc.last_rx == 0.001
    feed(rs, wire.SCATTER, 0, 4, 0.003, last=True)
    assert rs.sc.last_seen == 1
    assert rs.missing_ranges(wire.SCATTER, 0) == [(10, 20)]


def test_accept_rejects_out_of_shard_ranges_and_late_stages():
    rs = make_round(23, world=4, me=1, per_pkt=4)  # shards 6,6,6,5
    h = wire.Header(wire.MAGIC, 1, wire.DATA, wire.SCATTER, 0, 0, 0, 0, 1, 8, 4, 0, 0)
    buf = np.zeros(100, np.uint8)
    assert rs.accept(h, buf, 0.0) == "range"  # offset 8 is past the 6-element shard
    h = h._replace(offset=4, count=4)
    assert rs.accept(h, buf, 0.0) == "range"  # packet 1 of shard 1 has 2 elements
    assert rs.accept(h._replace(count=2), buf, 0.0) is None
    rs.end_scatter(0.01, cap_hit=False)
    assert rs.accept(h._replace(count=2), buf, 0.02) == "late"


def test_round_with_missing_data_fills_per_policy():
    rs = make_round(40, world=4, me=0, per_pkt=10)  # 10 per shard, 1 packet each
    for src in (1, 2):
        feed(rs, wire.SCATTER, src, 0, 0.001)  # rank 3's contribution lost
    rs.end_scatter(0.002, cap_hit=False)
    own = np.arange(10, dtype=np.float32)
    assert np.allclose(rs.out[:10], (own + 2) * 4 / 3)  # dblp: rescaled by N / 3
    feed(rs, wire.GATHER, 1, 0, 0.003)
    rs.end_gather(0.004, cap_hit=False)
    rs.finish()
    assert np.allclose(rs.out[10:20], 1.0)  # arrived
    assert np.allclose(rs.out[20:40], np.arange(20, 40) * 4)  # missing: own x N
    assert rs.delivered_loss == pytest.approx((10 + 20) / (30 + 30))


def test_tail_wait_grows_with_p50():
    pol = Dblp()
    p = progress(epsilon=0.1, received=950, last_rx=0.0, last_seen=2, p50=0.5)
    assert not pol.idle(p, 0.049)
    assert pol.idle(p, 0.05)  # 10 % of p50
    assert pol.verdict(p, 0.049).recheck_at == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("bad", "why"), [(np.nan, "nonfinite"), (np.inf, "nonfinite"), (-np.inf, "nonfinite"),
                     (3e38, "overflow"), (-1e38, "overflow")],
)  # fmt: skip
def test_a_screened_scatter_datagram_is_dropped_alone_and_stays_missing(bad, why):
    rs = make_round(40, world=4, me=0, per_pkt=10)  # 10 elements per shard, 1 packet each
    for src in (1, 2, 3):
        vals = np.ones(10, "<f4")
        if src == 2:
            vals[3] = bad
        h = wire.Header(wire.MAGIC, wire.VERSION, wire.DATA, 0, 0, 1, 0, src, 0, 0, 10, 0, 0)
        buf = np.frombuffer(wire.encode(h, vals.tobytes()), np.uint8).copy()
        assert rs.accept(h, buf, 0.001) == (why if src == 2 else None)
    # The honest contributions stay; only rank 2's packet is missing, to be asked for again.
    assert np.array_equal(rs.partial, np.arange(10, dtype=np.float32) + 2)
    assert rs.sc.missing == 10 and rs.pkts_received == 2
    assert rs.missing_ranges(wire.SCATTER, 2) == [(0, 10)]
    assert rs.missing_ranges(wire.SCATTER, 1) == []
    # A good copy of the same packet (the repair) is then taken.
    h = wire.Header(wire.MAGIC, wire.VERSION, wire.DATA, 0, 0, 1, 0, 2, 0, 0, 10, 0, 0)
    buf = np.frombuffer(wire.encode(h, np.ones(10, "<f4").tobytes()), np.uint8).copy()
    assert rs.accept(h, buf, 0.002) is None and rs.sc.missing == 0


def test_scatter_values_just_below_flt_max_over_n_cannot_overflow_a_rescale():
    rs = make_round(40, world=4, me=0, per_pkt=10)
    big = np.float32(rs.bounds[wire.SCATTER])
    assert float(big) * 4 <= float(np.finfo(np.float32).max)
    h = wire.Header(wire.MAGIC, wire.VERSION, wire.DATA, 0, 0, 1, 0, 1, 0, 0, 10, 0, 0)
    over = np.full(10, big, "<f4")
    assert rs.accept(h, np.frombuffer(wire.encode(h, over.tobytes()), np.uint8).copy(), 0) == (
        "overflow"
    )
    under = np.full(10, np.nextafter(big, np.float32(0)), "<f4")
    for src in (1, 2, 3):
        h = h._replace(src=src)
        buf = np.frombuffer(wire.encode(h, under.tobytes()), np.uint8).copy()
        assert rs.accept(h, buf, 0.001) is None
    rs.end_scatter(0.002, cap_hit=False)
    assert np.isfinite(rs.out).all()


def test_a_non_finite_gathered_datagram_is_dropped_and_counts_as_missing():
    rs = make_round(40, world=4, me=0, per_pkt=10)
    rs.end_scatter(0.001, cap_hit=False)
    for src in (1, 2, 3):
        vals = np.full(10, np.nan if src == 3 else 1e37, "<f4")
        h = wire.Header(wire.MAGIC, wire.VERSION, wire.DATA, 1, 0, 1, 0, src, src, 0, 10, 0, 0)
        buf = np.frombuffer(wire.encode(h, vals.tobytes()), np.uint8).copy()
        assert rs.accept(h, buf, 0.002) == ("nonfinite" if src == 3 else None)
    assert rs.ga.missing == 10 and rs.missing_ranges(wire.GATHER, 3) == [(0, 10)]
    rs.finish()
    assert np.isfinite(rs.out).all()


def test_dblp_asks_only_for_the_excess_beyond_eps_and_reliable_for_everything():
    p = progress(expected=1000, received=700, epsilon=0.2)  # 300 missing, 200 allowed
    assert Dblp().repair_elems(p) == int(REPAIR_MARGIN * 100)
    assert Dblp().repair_elems(progress(expected=1000, received=850, epsilon=0.2)) == 0
    assert Reliable().repair_elems(p) is None


def test_repair_quota_is_shared_by_what_each_peer_owes_in_whole_packets():
    owed = {0: [(0, 40), (100, 60)], 2: [(0, 100)]}  # 100 and 100 elements, 10 per packet
    assert within_quota(owed, None, 10) == owed
    assert within_quota(owed, 500, 10) == owed
    cut = within_quota(owed, 50, 10)
    assert cut == {0: [(0, 25 + 5)], 2: [(0, 30)]}  # 25 each, rounded up to whole packets
    assert within_quota(owed, 0, 10) == {0: [], 2: []}
    # a peer owing a little is still asked (ceil), never more than it owes
    small = within_quota({0: [(0, 10)], 1: [(0, 990)]}, 100, 10)
    assert small[0] == [(0, 10)] and sum(c for _, c in small[1]) == 100
