"""iperf3's `-J` report (iperf 3.12): read for its error, kept raw in the run folder.

SAMPLE is a real UDP report (`-u -b 10M -l 1400 -t 1 -i 0.1 -J --get-server-output`), cut to
its first interval and the first lines of the server's text; REFUSED is iperf3's whole report
when no server listens (it exits 0 all the same).
"""

import json
from pathlib import Path

import pytest

from testbed.run.probes import iperf3_json_path, iperf3_result, parse_iperf3_line

SAMPLE = json.dumps(
    {
        "start": {"version": "iperf 3.12", "test_start": {"protocol": "UDP", "num_streams": 1,
                  "blksize": 1400, "omit": 0, "duration": 1, "bytes": 0, "blocks": 0,
                  "reverse": 0, "tos": 0, "target_bitrate": 10000000}},
        "intervals": [{"sum": {"start": 0, "end": 0.100108, "seconds": 0.10010799765586853,
                       "bytes": 124600, "bits_per_second": 9957246.40729107, "packets": 89,
                       "omitted": False, "sender": True}}],
        "end": {"sum": {"start": 0, "end": 1.000158, "seconds": 1.000158, "bytes": 1250200,
                "bits_per_second": 10000849.93625478, "jitter_ms": 0.009756962330338,
                "lost_packets": 0, "packets": 893, "lost_percent": 0, "sender": True}},
        "server_output_text": "Accepted connection from 127.0.0.1, port 39574\n"
        "[  5] local 127.0.0.1 port 5201 connected to 127.0.0.1 port 5202\n"
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        "[  5]   0.00-0.10   sec   122 KBytes  9.96 Mbits/sec  0.002 ms  0/89 (0%)  \n",
    },
    indent="\t",
)  # fmt: skip
REFUSED = """{
\t"start":\t{
\t\t"connected":\t[],
\t\t"version":\t"iperf 3.12",
\t\t"system_info":\t"Linux vm 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0 x86_64"
\t},
\t"intervals":\t[],
\t"end":\t{
\t},
\t"error":\t"unable to connect to server: Connection refused"
}"""


def test_report_is_read_and_its_server_lines_parse_like_the_live_ones():
    r = iperf3_result(SAMPLE, "probe")
    assert (r["end"]["sum"]["lost_packets"], r["end"]["sum"]["packets"]) == (0, 893)
    server = r["server_output_text"].splitlines()
    assert parse_iperf3_line(server[-1]) == (0.0, 0.1, 9.96, 0, 89)


def test_an_exit_0_report_with_an_error_raises_it():
    with pytest.raises(RuntimeError, match="probe h1 -> h3: unable to connect.*refused"):
        iperf3_result(REFUSED, "probe h1 -> h3")
    with pytest.raises(RuntimeError, match="no JSON"):
        iperf3_result("iperf3: error - unable to connect to server", "probe")


def test_kept_report_path():
    assert iperf3_json_path(Path("/r"), "h1", "h16") == Path("/r/probes/iperf3-h1-h16.json")
