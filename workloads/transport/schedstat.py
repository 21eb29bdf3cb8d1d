"""Run-queue waits from /proc schedstat: how long threads were runnable but off the CPU.

The transports record them per round beside their latencies, so a report can say how much of a
slow round was the machine, not the network.
"""

from __future__ import annotations

import os


def thread_times_ns(tid: int | str = "self") -> tuple[int, int]:
    """(time on a CPU, run-queue wait) so far (ns) of one thread of this process; (0, 0) if it
    cannot be read."""
    path = "/proc/thread-self/schedstat" if tid == "self" else f"/proc/self/task/{tid}/schedstat"
    try:
        with open(path) as f:
            run, wait = f.read().split()[:2]
        return int(run), int(wait)
    except (OSError, ValueError):
        return 0, 0


def schedstat_waits(pid: str = "self") -> dict[str, int]:
    """Run-queue wait so far (ns) of every thread of a process: field 2 of each task's schedstat.

    Per thread, because the per-process file counts only the main thread while the transports
    do their work on their own threads. A thread that exits between listing and reading is
    skipped.
    """
    waits = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                waits[tid] = int(f.read().split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return waits


def max_wait_ms(before: dict[str, int], after: dict[str, int]) -> float:
    """The longest any one thread waited for a CPU between two snapshots (ms).

    A round is delayed by the waits on its critical path, which is one thread at a time; the
    longest single-thread wait bounds that from above. Summing over threads would count a
    process's idle helper threads (Gloo has many) waking at once, and flag a well-fed run.
    """
    return max((w - before.get(tid, 0) for tid, w in after.items()), default=0) / 1e6
