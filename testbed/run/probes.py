"""Network-only probe workloads (iperf3, ping) under a running burst schedule, binned in time.

Both write `probes` rows (analysis/schema.py) on CLOCK_MONOTONIC, beside the `bursts` log.
- iperf3: the *receiver's* per-interval report (throughput, and for UDP lost/total datagrams),
  each line time-stamped on arrival; the interval clock is anchored to CLOCK_MONOTONIC by the
  earliest (arrival - interval end), since a line can only arrive late. The client binds its
  data stream to port 5202, so only the control connection (TCP 5201) escapes loss rules.
  The receiver's lines stay text: iperf3 3.12's `-J` prints once, at the end, so it has no
  arrival times (`--json-stream` needs iperf3 >= 3.17). The client's own `-J` report, with the
  server's text (`--get-server-output`), is kept as `probes/iperf3-<src>-<dst>.json`.
- ping: `ping -D` realtime stamps mapped to CLOCK_MONOTONIC; send times follow icmp_seq.
Servers are started with Popen and killed by PID (`iperf3 -s -D` daemons outlive Mininet).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from workloads.transport.dilation import TimeDilation

__all__ = [
    "bin_iperf3",
    "bin_ping",
    "iperf3_result",
    "iperf3_server",
    "iperf3_udp_totals",
    "parse_iperf3_line",
    "parse_ping_line",
    "run_probe",
]

CONTROL_PORT = 5201
DATA_PORT = 5202
_UNITS = {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1e3}
_IPERF = re.compile(
    r"\[\s*\d+\]\s+([\d.]+)-([\d.]+)\s+sec\s+[\d.]+\s+\w?Bytes\s+([\d.]+)\s+([KMG]?)bits/sec"
    r"(?:\s+[\d.]+\s+ms\s+(\d+)/(\d+))?"
)
_PING = re.compile(r"\[([\d.]+)\].*icmp_seq=(\d+).*time=([\d.]+) ms")


def parse_iperf3_line(line: str) -> tuple[float, float, float, int, int] | None:
    """(start, end, Mbit/s, lost, total) of one interval line; lost/total 0 for TCP."""
    m = _IPERF.search(line)
    if not m:
        return None
    start, end, rate, unit, lost, total = m.groups()
    mbps = float(rate) * _UNITS[unit]
    return float(start), float(end), mbps, int(lost or 0), int(total or 0)


def bin_iperf3(lines: list[tuple[float, str]], run_id: str) -> list[dict[str, Any]]:
    """Rows from (arrival CLOCK_MONOTONIC, text) receiver lines; the summary is left out."""
    intervals = []
    for t, text in lines:
        if text.startswith("- - -"):
            break  # the end-of-test summary follows
        parsed = parse_iperf3_line(text)
        if parsed and parsed[1] > parsed[0]:  # iperf3 can close with an empty interval
            intervals.append((t, *parsed))
    if not intervals:
        return []
    anchor = min(t - end for t, _, end, *_ in intervals)
    rows = []
    for _, start, end, mbps, lost, total in intervals:
        rows.append(
            {
                "run_id": run_id,
                "probe": "iperf3",
                "t_start_s": anchor + start,
                "t_end_s": anchor + end,
                "mbps": mbps,
                "sent": total,
                "lost": lost,
                "loss": lost / total if total else 0.0,
                "rtt_ms": math.nan,
            }
        )
    return rows


def iperf3_result(text: str, what: str) -> dict[str, Any]:
    """iperf3 `-J` output as a dict; RuntimeError with iperf3's own error where it has one
    (iperf3 3.12 exits 0 with `-J` even when the test failed: the JSON's "error" says why)."""
    try:
        result = json.loads(text)
    except json.JSONDecodeError:
        raise RuntimeError(f"{what}: iperf3 printed no JSON: {text[-300:]!r}") from None
    if "error" in result:
        raise RuntimeError(f"{what}: {result['error']}")
    return result


def iperf3_json_path(run_dir: Path, src: str, dst: str) -> Path:
    """Where a run keeps the raw `iperf3 -J` report of its probe src -> dst."""
    return Path(run_dir) / "probes" / f"iperf3-{src}-{dst}.json"


def parse_ping_line(line: str) -> tuple[float, int, float] | None:
    """(realtime stamp, icmp_seq, rtt ms) of one `ping -D` reply line."""
    m = _PING.search(line)
    return (float(m.group(1)), int(m.group(2)), float(m.group(3))) if m else None


def bin_ping(
    replies: list[tuple[float, int, float]],
    count: int,
    interval_s: float,
    realtime_offset_s: float,
    bin_s: float,
    run_id: str,
) -> list[dict[str, Any]]:
    """Rows from ping replies; realtime_offset_s = time.time() - time.monotonic()."""
    if not replies:
        return []
    # Send time of a reply = its receive stamp minus its RTT; a lost probe's send time is
    # interpolated by icmp_seq (ping's real interval drifts above the asked one under load).
    known = sorted({seq: t - rtt / 1000 - realtime_offset_s for t, seq, rtt in replies}.items())
    seqs = np.array([k for k, _ in known], dtype=float)
    sends = np.array([v for _, v in known])
    slope = np.polyfit(seqs, sends, 1)[0] if len(known) > 1 else interval_s
    every = np.arange(1, count + 1, dtype=float)
    t_send = np.interp(every, seqs, sends)
    t_send = np.where(every < seqs[0], sends[0] - (seqs[0] - every) * slope, t_send)
    t_send = np.where(every > seqs[-1], sends[-1] + (every - seqs[-1]) * slope, t_send)
    t_first = float(t_send[0])
    n_bins = max(1, math.ceil((float(t_send[-1]) - t_first) / bin_s + 1e-9))
    sent = [0] * n_bins
    got: list[list[float]] = [[] for _ in range(n_bins)]
    rtt_by_seq = {seq: rtt for _, seq, rtt in replies}
    for seq, t in zip(range(1, count + 1), t_send, strict=True):
        b = min(n_bins - 1, int((t - t_first) / bin_s))
        sent[b] += 1
        if seq in rtt_by_seq:
            got[b].append(rtt_by_seq[seq])
    return [
        {
            "run_id": run_id,
            "probe": "ping",
            "t_start_s": t_first + b * bin_s,
            "t_end_s": t_first + (b + 1) * bin_s,
            "mbps": 0.0,
            "sent": sent[b],
            "lost": sent[b] - len(got[b]),
            "loss": (sent[b] - len(got[b])) / sent[b] if sent[b] else 0.0,
            "rtt_ms": statistics.median(got[b]) if got[b] else math.nan,
        }
        for b in range(n_bins)
        if sent[b]
    ]


class _Lines:
    """Reads a process's stdout in a thread, stamping each line with CLOCK_MONOTONIC."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            with self._cond:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._cond.notify_all()

    def wait_for(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(text in s for _, s in self.lines):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def _popen(net, host: str, argv: list[str], what: str) -> subprocess.Popen:
    proc = net.node(host).popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    net.register_process(proc, what)
    return proc


def _end(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for a process we started, then terminate and kill it by PID if it is still there."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(3)


@contextlib.contextmanager
def iperf3_server(
    net,
    host: str,
    interval_s: float | None = None,
    ready_timeout_s: float = 5.0,
    port: int = CONTROL_PORT,
) -> Iterator[tuple[subprocess.Popen, _Lines]]:
    """A one-off `iperf3 -s -1` on `port` (the control port unless told) in host, yielded once
    it says it listens; a benchmark runs many side by side, each on its own port.

    Its stdout is read as it comes (`--forceflush`: a pipe would otherwise hold the lines back),
    so readiness is iperf3's own "Server listening" line, not a guess. Ended by PID on exit.
    """
    argv = ["iperf3", "-s", "-1", "-p", str(port), "--forceflush"]
    if interval_s is not None:
        argv += ["-i", f"{interval_s:g}"]
    server = _popen(net, host, argv, f"iperf3 server in {host}:{port}")
    try:
        lines = _Lines(server)
        if not lines.wait_for("Server listening", ready_timeout_s):
            raise RuntimeError(
                f"iperf3 server in {host}:{port} did not listen within {ready_timeout_s:g} s: "
                f"{lines.lines[-3:]}"
            )
        yield server, lines
    finally:
        _end(server, 0)


def iperf3_udp_totals(
    net, scheduler, src: str, dst: str, seconds: float, mbps: float = 20.0
) -> tuple[int, int]:
    """(lost, sent) datagrams of a UDP iperf3 src -> dst, by iperf3's own end-of-test count.

    The scheduler is started when the client is, the server already listening.
    """
    with iperf3_server(net, dst):
        scheduler.start(time.monotonic())
        argv = ["iperf3", "-c", net.topo.host_ip(dst), "-p", str(CONTROL_PORT),
                "--cport", str(DATA_PORT), "-u", "-b", f"{mbps:g}M", "-l", "1400",
                "-t", f"{seconds:g}", "-J"]  # fmt: skip
        out = net.exec(src, argv, timeout=seconds + 20)
        end = iperf3_result(out, f"iperf3 {src} -> {dst}")["end"]["sum"]
    return end["lost_packets"], end["packets"]


def run_probe(
    net,
    scheduler,
    kind: str,
    src: str,
    dst: str,
    duration_s: float,
    bin_s: float = 0.1,
    *,
    run_id: str,
    protocol: str = "udp",
    mbps: float = 50.0,
    ping_interval_s: float = 0.01,
    run_dir: Path | None = None,
    time_scale: float = 1.0,
) -> list[dict[str, Any]]:
    """Probe src -> dst for duration_s with the scheduler started at the probe's start.

    kind "iperf3" (protocol udp at `mbps`, or tcp) or "ping" (every ping_interval_s); returns
    `probes` rows, one per bin_s bin (iperf3's interval, >= 0.1 s). With `run_dir`, iperf3's
    raw `-J` report is kept there (`iperf3_json_path`), also when the client failed.
    Times and the rate are emulated: under time dilation (`time_scale` D) the probe runs D x
    longer in D x longer bins at rate / D (testbed/run/dilation.py maps its rows back).
    """
    if kind not in ("iperf3", "ping"):
        raise ValueError(f"probe kind {kind!r}: use iperf3 or ping")
    dil = TimeDilation(time_scale)
    duration_s, bin_s = dil.played(duration_s), dil.played(bin_s)
    ping_interval_s, mbps = dil.played(ping_interval_s), dil.played_rate(mbps)
    ip = net.topo.host_ip(dst)
    if kind == "ping":
        return _run_ping(net, scheduler, src, ip, duration_s, bin_s, run_id, ping_interval_s)
    interval = max(bin_s, 0.1)
    with iperf3_server(net, dst, interval_s=interval) as (server, lines):
        argv = ["iperf3", "-c", ip, "-p", str(CONTROL_PORT), "--cport", str(DATA_PORT),
                "-t", f"{duration_s:g}", "-i", f"{interval:g}",
                "-J", "--get-server-output"]  # fmt: skip
        if protocol == "udp":
            argv += ["-u", "-b", f"{mbps:g}M", "-l", "1400"]
        client = _popen(net, src, argv, f"iperf3 client in {src}")
        said = _Lines(client)
        scheduler.start(time.monotonic())
        _end(client, duration_s + 20)
        _end(server, 10)
        lines.join(5)
        said.join(5)
        report = "\n".join(s for _, s in said.lines)
        if run_dir is not None:
            path = iperf3_json_path(run_dir, src, dst)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(report + "\n")
        what = f"iperf3 client {src} -> {dst} (exit {client.returncode})"
        iperf3_result(report, what)
        if client.returncode != 0:
            raise RuntimeError(f"{what}: {report[-300:]}")
        return bin_iperf3(lines.lines, run_id)


def _run_ping(net, scheduler, src, ip, duration_s, bin_s, run_id, interval_s) -> list[dict]:
    count = max(1, int(duration_s / interval_s))
    argv = ["ping", "-D", "-n", "-i", f"{interval_s:g}", "-W", "1", "-c", str(count), ip]
    offset = time.time() - time.monotonic()
    proc = _popen(net, src, argv, f"ping in {src}")
    try:
        lines = _Lines(proc)
        scheduler.start(time.monotonic())
        _end(proc, duration_s + 15)
        lines.join(5)
        offset = (offset + time.time() - time.monotonic()) / 2
        replies = [r for _, s in lines.lines if (r := parse_ping_line(s))]
        return bin_ping(replies, count, interval_s, offset, bin_s, run_id)
    finally:
        _end(proc, 0)
