"""Syscall counts of a traced thread (`strace -c` or `perf stat` on syscall tracepoints) and the
per-MiB figures of a profile window, kept apart from any process so recorded text tests them.

A MiB here is UDP payload the host sent: interface bytes less IPv4 + UDP + Ethernet headers
per packet (pacer.WIRE_OVERHEAD), so it holds the transport's 40-byte header too (< 3% at MTU
1500); the emulated host runs nothing else that sends at volume.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.procfs import NetCounts, TaskTimes
from workloads.transport.pacer import WIRE_OVERHEAD

MIB = 1 << 20
#: The syscalls of the engine's loop, by what they do for it; the rest are counted as others.
KINDS = {
    "send": ("sendmmsg", "sendmsg", "sendto"),
    "receive": ("recvmmsg", "recvmsg", "recvfrom"),
    "wait": ("poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect6"),
}
#: perf's per-syscall tracepoints for the kinds, and its count of every syscall entered.
PERF_EVENTS = tuple(f"syscalls:sys_enter_{n}" for names in KINDS.values() for n in names)
PERF_TOTAL = "raw_syscalls:sys_enter"


@dataclass(frozen=True)
class Calls:
    calls: int
    errors: int | None  # None: the tool does not count failed calls (perf stat)


def parse_strace_c(text: str) -> dict[str, Calls]:
    """`strace -c`'s table (calls, and errors where any) by syscall; strace's own lines
    ("Process N attached"), the header, rules and the total row are skipped."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) not in (5, 6) or not parts[0][:1].isdigit() or parts[-1] == "total":
            continue
        try:
            calls = int(parts[3])
            errors = int(parts[4]) if len(parts) == 6 else 0
        except ValueError:
            continue
        out[parts[-1]] = Calls(calls, errors)
    return out


def parse_perf_stat(text: str) -> dict[str, Calls]:
    """`perf stat -x,` lines (count,unit,event,...) by syscall; the total under "*"; an event
    perf did not count ("<not counted>") is left out."""
    out = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[0].strip().isdigit():
            continue
        event = parts[2]
        if event == PERF_TOTAL:
            out["*"] = Calls(int(parts[0]), None)
        elif event.startswith("syscalls:sys_enter_"):
            out[event.removeprefix("syscalls:sys_enter_")] = Calls(int(parts[0]), None)
    return out


def sent_mib(net: NetCounts) -> float:
    """UDP payload the host sent, MiB (see the module docstring)."""
    return (net.tx_bytes - WIRE_OVERHEAD * net.tx_packets) / MIB


def cpu_figures(task: TaskTimes, process_run_ns: int, net: NetCounts, clk_tck: int) -> dict:
    """An untraced window's per-MiB figures of the engine thread (and its whole process)."""
    mib = sent_mib(net)
    if mib <= 0:
        raise ValueError("the host sent nothing in the window")
    tick_ms = 1e3 / clk_tck
    return {
        "mib": mib,
        "cpu_ms_per_mib": task.run_ns / 1e6 / mib,
        "user_ms_per_mib": task.utime_ticks * tick_ms / mib,
        "sys_ms_per_mib": task.stime_ticks * tick_ms / mib,
        "wakeups_per_mib": task.voluntary / mib,
        "preemptions_per_mib": task.involuntary / mib,
        "process_ms_per_mib": process_run_ns / 1e6 / mib,
    }


def syscall_rows(counts: dict[str, Calls], net: NetCounts) -> list[dict]:
    """One row per syscall of the traced window, most called first: calls per MiB, the share
    that failed (EAGAIN: a drain that found nothing), and for sendmmsg / recvmmsg the
    datagrams per call (the host's packets over the calls; for recvmmsg over the calls that
    did not fail, where the tool counts failures: strace does, perf stat does not);
    then a row per kind and the total. perf's total ("*") counts syscalls of every name."""
    mib = sent_mib(net)
    if mib <= 0:
        raise ValueError("the host sent nothing in the traced window")
    named = {n: c for n, c in counts.items() if n != "*"}
    rows = []
    for name, c in sorted(named.items(), key=lambda kv: -kv[1].calls):
        row = {"syscall": name, "per_mib": c.calls / mib, "failed": _failed(c)}
        ok = c.calls - (c.errors or 0)
        if name == "sendmmsg" and c.calls:
            row["datagrams_per_call"] = net.tx_packets / c.calls
        if name == "recvmmsg" and ok > 0:
            row["datagrams_per_call"] = net.rx_packets / ok
        rows.append(row)
    for kind, names in KINDS.items():
        calls = sum(named[n].calls for n in names if n in named)
        rows.append({"syscall": f"({kind})", "per_mib": calls / mib, "failed": None})
    total = counts["*"].calls if "*" in counts else sum(c.calls for c in named.values())
    rows.append({"syscall": "(all)", "per_mib": total / mib, "failed": None})
    return rows


def _failed(c: Calls) -> float | None:
    return None if c.errors is None or not c.calls else c.errors / c.calls
