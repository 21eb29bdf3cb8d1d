"""Worker processes inside the emulated hosts: start, watch, stop.

Rank 0's stdout is the run's event stream (JSON lines: t0, step, eval, done); every
rank's output is also kept in `rank<r>/worker.log`, the parameter server's (`--collective
ps`) in `server/server.log`. The group is the one place that knows the workers' and the
server's PIDs, so stopping them is exact — never a kill by name.
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
from workloads.spec import MASTER_PORT

STOP_GRACE_S = 3.0
#: The file in the run folder that hands every rank its WorkerSpec.
WORKER_SPEC = "worker_spec.json"


@dataclass(frozen=True)
class Placement:
    """rank -> (host name, host address); rank 0's host is the Gloo rendezvous master."""

    hosts: tuple[str, ...]
    addrs: tuple[str, ...]
    #: the parameter server's host and address (`--collective ps`), not a DDP rank
    server_host: str | None = None
    server_addr: str | None = None


def write_worker_spec(spec: RunSpec, run_dir: Path, dilation: float | None = None) -> Path:
    """The validated worker part of the spec, pacing and dilation resolved, as JSON in the run
    folder."""
    path = Path(run_dir) / WORKER_SPEC
    path.write_text(spec.worker_spec(dilation).model_dump_json(indent=2) + "\n")
    return path


def worker_argv(
    spec_file: Path, placement: Placement, rank: int, run_dir: Path, run_id: str
) -> list[str]:
    """The `python -m workloads.train` command line of one rank: the spec file and who it is."""
    argv = [
        sys.executable, "-m", "workloads.train", "--spec", spec_file,
        "--rank", rank, "--world", len(placement.hosts),
        "--master-addr", placement.addrs[0], "--master-port", MASTER_PORT,
        "--addr", placement.addrs[rank], "--out", run_dir, "--run-id", run_id,
    ]  # fmt: skip
    return [str(a) for a in argv]


def server_argv(spec_file: Path, placement: Placement, run_dir: Path, run_id: str) -> list[str]:
    """The `python -m workloads.ps_server` command line: the workers' spec and rendezvous, its
    own address; `--world` is the number of workers (the server is the transport's rank N)."""
    if placement.server_addr is None:
        raise ValueError("this placement has no parameter server")
    argv = [
        sys.executable, "-m", "workloads.ps_server", "--spec", spec_file,
        "--world", len(placement.hosts),
        "--master-addr", placement.addrs[0], "--master-port", MASTER_PORT,
        "--addr", placement.server_addr, "--out", run_dir, "--run-id", run_id,
    ]  # fmt: skip
    return [str(a) for a in argv]


@dataclass
class WorkerGroup:
    """The running ranks of one run."""

    procs: list[subprocess.Popen]
    run_dir: Path
    #: the parameter server (`--collective ps`): watched and stopped with the workers; its
    #: failure is reported as rank N (len(procs)), its log is server/server.log
    server: subprocess.Popen | None = None
    events: queue.Queue = field(default_factory=queue.Queue)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start_readers(self) -> None:
        for rank, proc in enumerate(self._all()):
            t = threading.Thread(target=self._pump, args=(rank, proc), daemon=True)
            t.start()
            self._threads.append(t)

    def _all(self) -> list[subprocess.Popen]:
        return self.procs + ([self.server] if self.server is not None else [])

    def _log(self, rank: int) -> Path:
        if rank == len(self.procs):
            return self.run_dir / "server" / "server.log"
        return self.run_dir / f"rank{rank}" / "worker.log"

    def _pump(self, rank: int, proc: subprocess.Popen) -> None:
        path = self._log(rank)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if rank == 0 and line.startswith("{"):
                    with contextlib.suppress(json.JSONDecodeError):
                        self.events.put(json.loads(line))

    def poll(self) -> list[int | None]:
        return [p.poll() for p in self._all()]

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
        for p in self._all():
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for p in self._all():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        for t in self._threads:
            t.join(timeout=2)

    def tail(self, rank: int, lines: int = 15) -> str:
        path = self._log(rank)
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
