"""Pacer: per-pair rate caps (repairs included), round-robin, burst depth, wait times."""

from __future__ import annotations

import pytest

from workloads.transport.pacer import Pacer

PKT = 1514


def drive(pacer: Pacer, backlog: dict[int, int], seconds: float, step: float = 1e-4):
    """Send whatever the pacer allows on a simulated clock; bytes sent per peer."""
    sent = dict.fromkeys(pacer.peers, 0)
    t = 0.0
    while t < seconds:
        while True:
            wants = {p: PKT for p, n in backlog.items() if n > 0}
            p = pacer.next_peer(t, wants)
            if p is None:
                break
            pacer.consume(p, PKT)
            backlog[p] -= 1
            sent[p] += PKT
        t += step
    return sent


def test_each_pair_gets_rate_over_n_minus_1():
    pacer = Pacer([1, 2, 3], rate_mbps=120, now=0.0)
    sent = drive(pacer, {1: 10**6, 2: 10**6, 3: 10**6}, 1.0)
    pair = 120e6 / 8 / 3
    for p, b in sent.items():
        assert pair * 0.98 <= b <= pair + pacer.depth + PKT, (p, b)


def test_a_lone_busy_pair_is_still_capped():
    """Repairs to one peer must not take the whole rank's rate (no NACK-storm incast)."""
    pacer = Pacer([0, 2, 3], rate_mbps=120, now=0.0)
    sent = drive(pacer, {0: 10**6, 2: 0, 3: 0}, 1.0)
    assert sent[0] <= 120e6 / 8 / 3 + pacer.depth + PKT
    assert sent[2] == sent[3] == 0


def test_round_robin_order():
    pacer = Pacer([1, 2, 3], rate_mbps=1e6, now=0.0)
    order = []
    wants = {1: PKT, 2: PKT, 3: PKT}
    for _ in range(6):
        p = pacer.next_peer(0.0, wants)
        order.append(p)
        pacer.consume(p, PKT)
    assert order == [1, 2, 3, 1, 2, 3]


def test_burst_depth_and_wait():
    pacer = Pacer([1, 2], rate_mbps=100, now=0.0, burst_s=0.002)
    pair = 100e6 / 8 / 2
    assert pacer.depth == pytest.approx(max(4 * PKT, pair * 0.002))
    n = 0
    while pacer.next_peer(0.0, {1: PKT}) is not None:
        pacer.consume(1, PKT)
        n += 1
    assert n == int(pacer.depth // PKT)
    w = pacer.wait_s(0.0, {1: PKT})
    assert 0 < w <= PKT / pair + 1e-9
    assert pacer.next_peer(w + 1e-9, {1: PKT}) == 1
    assert pacer.wait_s(0.0, {}) is None


def test_tokens_never_exceed_depth_after_idle():
    pacer = Pacer([1], rate_mbps=10, now=0.0)
    pacer.next_peer(1000.0, {})
    assert pacer.tokens[1] == pacer.depth


def test_wait_for_a_batch_is_capped_at_the_bucket_depth():
    p = Pacer([1, 2], rate_mbps=8.0, now=0.0, burst_s=0.003, min_burst_bytes=1500)
    for peer in (1, 2):
        p.consume(peer, p.depth)  # empty buckets
    pair = p.pair_bytes_per_s
    assert p.wait_s(0.0, {1: 1000}) == pytest.approx(1000 / pair)
    # asking for more than the bucket holds waits only until the bucket is full
    assert p.wait_s(0.0, {1: 10 * p.depth}) == pytest.approx(p.depth / pair)
