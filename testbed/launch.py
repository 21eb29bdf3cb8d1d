"""Worker processes inside the emulated hosts: start, watch, stop.

Rank 0's stdout is the run's event stream (JSON lines: t0, step, eval, done); every
rank's output is also kept in `rank<r>/worker.log`. The group is the one place that
knows the workers' PIDs, so stopping them is exact — never a kill by name.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.spec import RunSpec

MASTER_PORT = 29500
STOP_GRACE_S = 3.0


@dataclass(frozen=True)
class Placement:
    """rank -> (host name, host address); rank 0's host is the Gloo rendezvous master."""

    hosts: tuple[str, ...]
    addrs: tuple[str, ...]


def worker_argv(spec: RunSpec, placement: Placement, rank: int, run_dir: Path, run_id: str) -> list:
    """The `python -m workloads.train` command line of one rank (the worker CLI contract)."""
    argv = [
        sys.executable, "-m", "workloads.train",
        "--rank", rank, "--world", len(placement.hosts),
        "--master-addr", placement.addrs[0], "--master-port", MASTER_PORT,
        "--addr", placement.addrs[rank],
        "--transport", spec.transport, "--workload", spec.workload,
        "--model", spec.model, "--epochs", spec.epochs, "--batch-size", spec.batch_size,
        "--lr", spec.lr, "--seed", spec.seed, "--threads", spec.threads,
        "--bucket-cap-mb", spec.bucket_cap_mb, "--rate-mbps", spec.pace,
        "--phase", spec.phase, "--optireduce-mode", spec.optireduce_mode,
        "--size-mib", spec.size_mib, "--interval-ms", spec.interval_ms, "--rounds", spec.rounds,
        "--out", run_dir, "--run-id", run_id,
    ]  # fmt: skip
    optional = {
        "--steps": spec.steps,
        "--eps-critical": spec.eps_critical,
        "--eps-stable": spec.eps_stable,
        "--epsilon": spec.epsilon,
        "--t-max-ms": spec.t_max_ms,
        "--resync-every": spec.resync_every,
    }
    for flag, value in optional.items():
        if value is not None:
            argv += [flag, value]
    if spec.rescale:
        argv.append("--rescale")
    return [str(a) for a in argv]


@dataclass
class WorkerGroup:
    """The running ranks of one run."""

    procs: list[subprocess.Popen]
    run_dir: Path
    events: queue.Queue = field(default_factory=queue.Queue)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start_readers(self) -> None:
        for rank, proc in enumerate(self.procs):
            t = threading.Thread(target=self._pump, args=(rank, proc), daemon=True)
            t.start()
            self._threads.append(t)

    def _pump(self, rank: int, proc: subprocess.Popen) -> None:
        log_dir = self.run_dir / f"rank{rank}"
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / "worker.log", "w") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if rank == 0 and line.startswith("{"):
                    with contextlib.suppress(json.JSONDecodeError):
                        self.events.put(json.loads(line))

    def poll(self) -> list[int | None]:
        return [p.poll() for p in self.procs]

    def failed(self) -> tuple[int, int] | None:
        """(rank, exit code) of the first rank that exited non-zero, if any."""
        for rank, code in enumerate(self.poll()):
            if code not in (None, 0):
                return rank, code
        return None

    def all_done(self) -> bool:
        return all(code == 0 for code in self.poll())

    def stop(self) -> None:
        """SIGTERM, a grace period, then SIGKILL — each rank by its own PID."""
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        for t in self._threads:
            t.join(timeout=2)

    def tail(self, rank: int, lines: int = 15) -> str:
        path = self.run_dir / f"rank{rank}" / "worker.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
