"""A received NACK is vetted whole before any work: nacks.nack_packets."""

from __future__ import annotations

import time

import numpy as np

from workloads.transport import wire
from workloads.transport.nacks import nack_packets

PER = 10


def ask(ranges, shard_len=95, npkts=10):
    view = memoryview(wire.HEADER.pack(*([0] * 13)) + wire.nack_payload(ranges))
    return nack_packets(view, len(ranges), wire.HEADER_BYTES, shard_len, PER, npkts)


def test_sorted_disjoint_ranges_name_their_packets():
    got = ask([(0, 20), (20, 10), (50, 10), (90, 5)])
    assert np.flatnonzero(got).tolist() == [0, 1, 2, 5, 9]
    assert np.flatnonzero(ask([(0, 95)])).tolist() == list(range(10))


def test_malformed_ranges_are_rejected_by_name():
    assert ask([(0, 0)]) == "nack_range"  # empty
    assert ask([(5, 10)]) == "nack_range"  # not packet-aligned
    assert ask([(90, 10)]) == "nack_range"  # past the shard
    assert ask([(20, 10), (0, 10)]) == "nack_order"  # unsorted
    assert ask([(0, 30), (20, 10)]) == "nack_order"  # overlapping
    assert ask([(0, 10), (0, 10)]) == "nack_order"  # repeated


def test_a_whole_shard_nack_costs_no_per_packet_python():
    """The review's attack: a shard of ~23k packets listed in every range of a NACK (179 at
    MTU 1500). Now rejected at once; and a legal NACK naming every packet costs a few numpy
    calls over the shard's bitmap."""
    per, npkts = 365, 23_000
    n = per * npkts
    repeat = [(0, n)] * wire.ranges_per_nack(1500)
    legal = [(i * 128 * per, 128 * per) for i in range(wire.ranges_per_nack(1500))]
    view = memoryview(wire.HEADER.pack(*([0] * 13)) + wire.nack_payload(repeat))
    assert nack_packets(view, len(repeat), wire.HEADER_BYTES, n, per, npkts) == "nack_order"
    view = memoryview(wire.HEADER.pack(*([0] * 13)) + wire.nack_payload(legal))
    t0 = time.process_time()
    for _ in range(100):
        got = nack_packets(view, len(legal), wire.HEADER_BYTES, n, per, npkts)
    per_nack_ms = (time.process_time() - t0) * 10
    assert got.sum() == min(npkts, 128 * len(legal))
    assert per_nack_ms < 5, per_nack_ms  # was ~41 ms with a Python loop per packet
