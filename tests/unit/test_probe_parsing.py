"""Probe output parsing and binning (pure): iperf3 receiver intervals and ping replies."""

import math

import pytest

from testbed.run.probes import bin_iperf3, bin_ping, parse_iperf3_line, parse_ping_line

UDP = "[  5]   0.10-0.20   sec   610 KBytes  49.9 Mbits/sec  0.012 ms  222/668 (33%)  "
TCP = "[  5]   1.00-1.10   sec  1.19 MBytes   100 Mbits/sec                  "


def test_parse_iperf3_intervals():
    assert parse_iperf3_line(UDP) == (0.1, 0.2, 49.9, 222, 668)
    assert parse_iperf3_line(TCP) == (1.0, 1.1, 100.0, 0, 0)
    assert parse_iperf3_line("[  5] 0.00-0.10 sec 12.2 KBytes 999 Kbits/sec")[2] == 0.999
    assert parse_iperf3_line("Server listening on 5201") is None


def test_bin_iperf3_anchors_on_the_earliest_arrival_and_drops_the_summary():
    lines = [
        (100.12, "[  5]   0.00-0.10   sec   610 KBytes  50.0 Mbits/sec  0.01 ms  0/446 (0%)"),
        (100.21, UDP),  # arrived 10 ms "early" relative to the first: the anchor is 100.01
        (100.40, "- - - - - - - - - - - - - - - - - - - - - - - - -"),
        (100.41, "[  5]   0.00-0.20   sec  1.2 MBytes  50.0 Mbits/sec  0.01 ms  222/1114 (20%)"),
    ]
    rows = bin_iperf3(lines, "r")
    assert len(rows) == 2
    assert rows[1]["t_start_s"] == pytest.approx(100.11)
    assert rows[1]["loss"] == pytest.approx(222 / 668)
    assert math.isnan(rows[0]["rtt_ms"])


def test_parse_ping_line():
    line = "[1700000000.250000] 64 bytes from 10.0.0.2: icmp_seq=7 ttl=62 time=6.10 ms"
    assert parse_ping_line(line) == (1700000000.25, 7, 6.1)
    assert parse_ping_line("PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.") is None


def test_bin_ping_interpolates_lost_probes_by_sequence():
    # sent every 19 ms (not the 10 ms asked), seq 4..6 lost, rtt 1 ms
    replies = [(1000.0 + 0.019 * s + 0.001, s, 1.0) for s in range(1, 11) if s not in (4, 5, 6)]
    rows = bin_ping(replies, 10, 0.01, 900.0, 0.1, "r")
    assert sum(r["sent"] for r in rows) == 10
    assert sum(r["lost"] for r in rows) == 3
    assert rows[0]["t_start_s"] == pytest.approx(100.019)
    assert [r["sent"] for r in rows] == [6, 4]
    assert rows[0]["lost"] == 3 and rows[0]["rtt_ms"] == 1.0
