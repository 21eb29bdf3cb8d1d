"""Where the transport's time goes in the fat-tree, per MiB sent: syscalls by kind, datagrams
per sendmmsg / recvmmsg call, wake-ups, user versus system time (issue 22).

    python -m benchmarks.transport_profile [--mtus 1500,9000] [--paths compiled]
        [--rounds 80] [--size-mib 4] [--workers 4] [--bw 100] [--rank 0]
        [--seconds 5] [--tracer perf|strace]

Per MTU and data path, one `testbed run --workload allreduce --burst none` at D = 1 runs while
this reads rank R from outside (procfs.py). Once R's host sends, the busiest of R's threads
over a second is taken for the engine. Then two windows of `--seconds` each, in this order:
- untraced: the engine thread's CPU (schedstat), user and system time (stat), wake-ups
  (voluntary context switches) and preemptions, and the whole process's CPU, per MiB sent;
- traced: `perf stat` on the syscall tracepoints of the engine thread (root has them here), or
  `strace -c -p TID` (`--tracer strace`, which also counts the calls that failed: EAGAIN, a
  drain that found nothing): calls per MiB by syscall, and datagrams per sendmmsg / recvmmsg
  call from the host's interface counters over the same window.
Tracing costs the thread (perf a little per syscall; strace stops it at every one, so its
batches may fill more), so the counts come from the traced window and every CPU figure from
the untraced one. The run then finishes, and its own CPU per MiB (all ranks, both windows) and
verdict close each block: the traced window slows rank R, so that verdict speaks of the
profile, not of the transport. Needs root; run it alone.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks import procfs
from benchmarks.allreduce_runs import (
    RUN_TIMEOUT_S,
    add_run_arguments,
    allreduce_argv,
    calm_bound_ratio,
    run_summary,
)
from benchmarks.syscall_counts import (
    PERF_EVENTS,
    PERF_TOTAL,
    Calls,
    cpu_figures,
    parse_perf_stat,
    parse_strace_c,
    syscall_rows,
)
from benchmarks.transport_fattree_cpu import PATH_FLAGS

#: Network, workers and rendezvous: how long rank R's host may take to start sending.
START_S = 300.0
#: Packets rank R's host sends before the rounds count as started (rendezvous sends few).
STARTED_PACKETS = 200
#: Seconds of thread times that pick the engine thread.
PICK_S = 1.0


def strace_window(pid: int, tid: int, seconds: float) -> tuple[dict[str, Calls], procfs.NetCounts]:
    """`strace -c` attached to one thread for `seconds`, and the host's counters meanwhile."""
    tracer = subprocess.Popen(
        ["strace", "-c", "-p", str(tid)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        said = tracer.stderr.readline()  # "strace: Process TID attached", or why not
        if "attached" not in said:
            raise SystemExit(f"strace -p {tid}: {said.strip() or 'no output'}")
        before = procfs.net_counts(pid)
        time.sleep(seconds)
        after = procfs.net_counts(pid)
        tracer.send_signal(signal.SIGINT)  # strace detaches and prints its table
        _, table = tracer.communicate(timeout=30)
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait(5)
    return parse_strace_c(table), after.minus(before)


def perf_window(pid: int, tid: int, seconds: float) -> tuple[dict[str, Calls], procfs.NetCounts]:
    """`perf stat` on the syscall tracepoints of one thread for `seconds` (perf's start-up
    falls inside the counters' window: a few tens of ms more MiB)."""
    events = ",".join((*PERF_EVENTS, PERF_TOTAL))
    argv = ["perf", "stat", "-x,", "-e", events, "-t", str(tid), "--", "sleep", f"{seconds:g}"]
    before = procfs.net_counts(pid)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
    after = procfs.net_counts(pid)
    counts = parse_perf_stat(done.stderr)
    if done.returncode or not counts:
        raise SystemExit(f"perf stat (exit {done.returncode}): {done.stderr[-800:]}")
    return counts, after.minus(before)


TRACERS: dict[str, Callable] = {"strace": strace_window, "perf": perf_window}


def _wait_for(what: str, run: subprocess.Popen, probe: Callable[[], object]) -> object:
    deadline = time.monotonic() + START_S
    while not (found := _quietly(probe)):
        if run.poll() is not None:
            raise SystemExit(f"testbed run ended (exit {run.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise SystemExit(f"no {what} within {START_S:g} s")
        time.sleep(0.2)
    return found


def _quietly(probe: Callable[[], object]) -> object:
    """The probe's answer; None while the process it reads is gone (the caller asks why)."""
    try:
        return probe()
    except (FileNotFoundError, ProcessLookupError):
        return None


def profile(run: subprocess.Popen, rank: int, seconds: float, tracer: str) -> dict:
    """The two windows of rank `rank` of a running `testbed run`."""
    pid = _wait_for(f"rank {rank}'s worker", run, lambda: procfs.find_rank(run.pid, rank))
    start = procfs.net_counts(pid)
    _wait_for(
        f"traffic from rank {rank}'s host",
        run,
        lambda: procfs.net_counts(pid).tx_packets - start.tx_packets > STARTED_PACKETS,
    )
    threads = procfs.all_task_times(pid)
    time.sleep(PICK_S)
    tid = procfs.busiest(threads, procfs.all_task_times(pid))
    try:
        t0, p0, n0 = procfs.task_times(pid, tid), procfs.all_task_times(pid), procfs.net_counts(pid)
        time.sleep(seconds)
        t1, p1, n1 = procfs.task_times(pid, tid), procfs.all_task_times(pid), procfs.net_counts(pid)
        cpu = cpu_figures(
            t1.minus(t0),
            procfs.process_run_ns(p1) - procfs.process_run_ns(p0),
            n1.minus(n0),
            os.sysconf("SC_CLK_TCK"),
        )
        counts, net = TRACERS[tracer](pid, tid, seconds)
    except (FileNotFoundError, ProcessLookupError):
        raise SystemExit(f"rank {rank} ended inside a window: raise --rounds") from None
    if run.poll() is not None:
        raise SystemExit("the run ended inside a window: raise --rounds")
    return {"pid": pid, "tid": tid, "cpu": cpu, "rows": syscall_rows(counts, net)}


def profile_run(mtu: int, path: str, args: argparse.Namespace) -> tuple[dict, dict]:
    """One run profiled: the windows' figures and the run's own summary."""
    label = f"profile-mtu{mtu}-{path}"
    argv = allreduce_argv(
        label, "--transport", args.transport, "--rounds", str(args.rounds),
        "--size-mib", str(args.size_mib), "--workers", str(args.workers), "--mtu", str(mtu),
        "--bw", str(args.bw), "--dilation", "1", PATH_FLAGS[path],
    )  # fmt: skip
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        run = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        try:
            found = profile(run, args.rank, args.seconds, args.tracer)
            run.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if run.poll() is None:
                run.terminate()  # testbed run tears its network down on SIGTERM
                run.wait(120)
        out.seek(0)
        err.seek(0)
        return found, run_summary(label, out.read(), err.read())


def print_block(mtu: int, path: str, rank: int, tracer: str, found: dict, summary: dict) -> None:
    c = found["cpu"]
    print(f"\n### MTU {mtu}, {path} data path: rank {rank} (pid {found['pid']}), "
          f"engine thread {found['tid']}")  # fmt: skip
    print(f"untraced window: {c['mib']:.1f} MiB sent by the host")
    print("| engine cpu ms/MiB | user ms/MiB | system ms/MiB | wake-ups/MiB | preempted/MiB "
          "| whole process cpu ms/MiB |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    print(f"| {c['cpu_ms_per_mib']:.2f} | {c['user_ms_per_mib']:.2f} | {c['sys_ms_per_mib']:.2f} "
          f"| {c['wakeups_per_mib']:.1f} | {c['preemptions_per_mib']:.1f} "
          f"| {c['process_ms_per_mib']:.2f} |")  # fmt: skip
    print(f"traced window ({tracer} attached to the engine thread): calls per MiB")
    print("| syscall | calls/MiB | failed | datagrams/call |")
    print("|---|---|---|---|")
    for r in found["rows"]:
        failed = "" if r["failed"] is None else f"{100 * r['failed']:.0f}%"
        per_call = f"{r['datagrams_per_call']:.1f}" if "datagrams_per_call" in r else ""
        print(f"| {r['syscall']} | {r['per_mib']:.1f} | {failed} | {per_call} |")
    print(f"the run: {summary.get('cpu_ms_per_mib') or float('nan'):.2f} ms/MiB over all "
          f"ranks (untraced and traced windows together), calm p50/bound "
          f"{calm_bound_ratio(summary):.2f}, faithful {summary.get('faithful')}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.transport_profile")
    ap.add_argument("--mtus", default="1500,9000")
    ap.add_argument("--paths", default="compiled", help="data paths to profile, in order")
    add_run_arguments(ap, size_mib=4.0)
    ap.set_defaults(rounds=80)
    ap.add_argument("--bw", type=float, default=100.0)
    ap.add_argument("--rank", type=int, default=0, help="the rank to profile")
    ap.add_argument("--seconds", type=float, default=5.0, help="each window's length")
    ap.add_argument("--tracer", choices=sorted(TRACERS), default="perf")
    args = ap.parse_args(argv)
    paths = args.paths.split(",")
    if unknown := set(paths) - set(PATH_FLAGS):
        ap.error(f"--paths: unknown {sorted(unknown)}; choose from {sorted(PATH_FLAGS)}")
    if not 0 <= args.rank < args.workers:
        ap.error(f"--rank: {args.rank} is not a rank of {args.workers} workers")
    print("Counts come from a traced window, CPU figures from an untraced one of the same run; "
          "a MiB is UDP payload the rank's host sent.")  # fmt: skip
    for mtu in (int(m) for m in args.mtus.split(",")):
        for path in paths:
            found, summary = profile_run(mtu, path, args)
            print_block(mtu, path, args.rank, args.tracer, found, summary)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
