"""What /proc says about a running worker: its engine thread's times and its host's counters.

The profile (transport_profile.py) reads a rank from outside, while `testbed run` drives it:
- a thread's CPU (schedstat, ns), user and system time (stat, clock ticks) and context
  switches (status: voluntary ones are wake-ups from a blocking call, involuntary ones
  preemptions);
- the datagrams its host sent and received: /proc/PID/net/dev is the interface table of the
  process's own network namespace, the emulated host's;
- which process is rank R of the run (its `workloads.train` command line, below the run's
  process) and which of its threads is the engine (the busiest: CPython 3.11 names no threads).
Parsers take text, so recorded samples test them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class TaskTimes:
    """A thread's counters so far; `minus` gives a window's."""

    run_ns: int
    utime_ticks: int
    stime_ticks: int
    voluntary: int
    involuntary: int

    def minus(self, before: TaskTimes) -> TaskTimes:
        return TaskTimes(*(getattr(self, f.name) - getattr(before, f.name) for f in fields(self)))


@dataclass(frozen=True)
class NetCounts:
    """Bytes and packets a host's interfaces (loopback aside) received and sent."""

    rx_bytes: int
    rx_packets: int
    tx_bytes: int
    tx_packets: int

    def minus(self, before: NetCounts) -> NetCounts:
        return NetCounts(*(getattr(self, f.name) - getattr(before, f.name) for f in fields(self)))


def parse_stat_times(text: str) -> tuple[int, int]:
    """(utime, stime) in clock ticks from a stat line: fields 14 and 15, counted after the
    command name, which may hold spaces and parentheses."""
    rest = text[text.rindex(")") + 2 :].split()
    return int(rest[11]), int(rest[12])


def parse_ctxt_switches(text: str) -> tuple[int, int]:
    """(voluntary, involuntary) context switches from a status file."""
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            found[key] = int(value)
    return found["voluntary_ctxt_switches"], found["nonvoluntary_ctxt_switches"]


def parse_net_dev(text: str) -> NetCounts:
    """Sum of every interface but `lo` in a /proc/net/dev table (8 receive columns, then
    transmit)."""
    rx_b = rx_p = tx_b = tx_p = 0
    for line in text.splitlines()[2:]:
        name, _, counters = line.partition(":")
        if name.strip() == "lo" or not counters:
            continue
        c = counters.split()
        rx_b, rx_p = rx_b + int(c[0]), rx_p + int(c[1])
        tx_b, tx_p = tx_b + int(c[8]), tx_p + int(c[9])
    return NetCounts(rx_b, rx_p, tx_b, tx_p)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def task_times(pid: int, tid: int) -> TaskTimes:
    base = f"/proc/{pid}/task/{tid}"
    utime, stime = parse_stat_times(_read(f"{base}/stat"))
    vol, invol = parse_ctxt_switches(_read(f"{base}/status"))
    return TaskTimes(int(_read(f"{base}/schedstat").split()[0]), utime, stime, vol, invol)


def all_task_times(pid: int) -> dict[int, TaskTimes]:
    """Every thread of a process; one that ends while listed is left out."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = task_times(pid, int(tid))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def busiest(before: dict[int, TaskTimes], after: dict[int, TaskTimes]) -> int:
    """The thread that ran most between two snapshots."""
    if not after:
        raise ValueError("no threads")
    zero = TaskTimes(0, 0, 0, 0, 0)
    return max(after, key=lambda t: after[t].minus(before.get(t, zero)).run_ns)


def process_run_ns(times: dict[int, TaskTimes]) -> int:
    return sum(t.run_ns for t in times.values())


def net_counts(pid: int) -> NetCounts:
    return parse_net_dev(_read(f"/proc/{pid}/net/dev"))


def is_rank(argv: list[str], rank: int) -> bool:
    """A worker's command line (launch.worker_argv), rank `rank`."""
    if "workloads.train" not in argv or "--rank" not in argv:
        return False
    at = argv.index("--rank") + 1
    return at < len(argv) and argv[at] == str(rank)


def parse_ppid(status: str) -> int:
    for line in status.splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise ValueError("no PPid line")


def descends(pid: int, ancestor: int, parent_of: Callable[[int], int | None]) -> bool:
    """Whether `ancestor` is `pid` or above it (parent_of: None where the chain ends)."""
    seen = set()
    at: int | None = pid
    while at is not None and at > 0 and at not in seen:
        if at == ancestor:
            return True
        seen.add(at)
        at = parent_of(at)
    return False


def _parent(pid: int) -> int | None:
    try:
        return parse_ppid(_read(f"/proc/{pid}/status"))
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def find_rank(ancestor: int, rank: int) -> int | None:
    """The PID of rank `rank`'s worker below process `ancestor`, or None (not yet started)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = _read(f"/proc/{entry}/cmdline").split("\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if is_rank(argv, rank) and descends(int(entry), ancestor, _parent):
            return int(entry)
    return None
