"""A long-lived shell inside one namespace: commands in on stdin, acknowledgements out on stdout.

Spawning a process per event from the loaded 2-core machine lagged 10-27 ms (MACHINE-NOTES);
writing a line to a shell that is already inside the namespace costs only the tool's own run
(~1.5 ms for `tc` / `iptables-legacy -R`). Commands to different namespaces run in parallel:
`submit` returns at once and `wait` collects the acknowledgement, time-stamped on arrival.
"""

from __future__ import annotations

import os
import select
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from testbed.base.kernel import KernelError

__all__ = ["RT_PRIORITY", "Ack", "ShellApplier", "make_realtime", "realtime_prefix"]

_MARK = "@@dblp-ack"
_EOF = "@@DBLP_EOF"


#: SCHED_FIFO priority of the shells, their ack readers, the incast senders and the scheduler's
#: player thread. On the 2-core machine shared with the workers, CFS delayed their wake-ups by
#: up to ~100-350 ms (benchmark). They sleep between events (a shell uses a few ms of CPU per
#: event, a sender ~10% of a core while it sends), and the kernel's RT throttling keeps 5% of
#: each core for everyone else.
RT_PRIORITY = 10


def realtime_prefix() -> list[str]:
    """`chrt -f N` for a child process when we may use SCHED_FIFO (root), else nothing."""
    return ["chrt", "-f", str(RT_PRIORITY)] if os.geteuid() == 0 else []


def make_realtime() -> bool:
    """Put the calling thread under SCHED_FIFO; False where not permitted."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except (AttributeError, OSError):
        return False
    return True


@dataclass(frozen=True)
class Ack:
    seq: int
    cmd: str
    returncode: int
    output: str
    t_s: float  # CLOCK_MONOTONIC when the acknowledgement arrived


class ShellApplier:
    """One `sh` entered into a namespace by ``prefix`` (e.g. ``mnexec -a PID``)."""

    def __init__(self, prefix: Sequence[str], what: str) -> None:
        self.what = what
        self.proc = subprocess.Popen(
            [*prefix, "sh"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=0,
        )
        self._seq = 0
        self._cmds: dict[int, str] = {}
        self._acks: dict[int, Ack] = {}
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"applier {what}", daemon=True)
        self._reader.start()

    def submit(self, argv: Sequence[str], stdin_text: str | None = None) -> int:
        """Queue one command (optionally fed `stdin_text`); returns its number for `wait`."""
        cmd = shlex.join(argv)
        ack = f"printf '\\n{_MARK} %d %d\\n' {{seq}} $?"
        with self._lock:
            self._seq += 1
            seq = self._seq
            with self._cond:
                self._cmds[seq] = cmd if stdin_text is None else f"{cmd} <<< {stdin_text!r}"
            if stdin_text is None:
                line = f"{cmd} 2>&1 </dev/null; {ack.format(seq=seq)}\n"
            else:
                body = stdin_text.rstrip("\n")
                line = f"{cmd} 2>&1 <<'{_EOF}'\n{body}\n{_EOF}\n{ack.format(seq=seq)}\n"
            try:
                self.proc.stdin.write(line.encode())
            except (BrokenPipeError, OSError) as e:
                raise KernelError(cmd, -1, f"applier shell for {self.what} is gone: {e}") from None
        return seq

    def wait(self, seq: int, timeout: float = 5.0) -> Ack:
        """The acknowledgement of `seq`; raises KernelError on a non-zero exit or a timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while seq not in self._acks:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    why = f"no acknowledgement within {timeout:g} s"
                    if self.proc.poll() is not None:
                        why = f"applier shell exited ({self.proc.returncode})"
                    raise KernelError(self._cmds.get(seq, "?"), -1, f"{self.what}: {why}")
                self._cond.wait(left)
            ack = self._acks.pop(seq)
        if ack.returncode != 0:
            raise KernelError(f"{self.what}: {ack.cmd}", ack.returncode, ack.output)
        return ack

    def run(self, argv: Sequence[str], timeout: float = 5.0, stdin_text: str | None = None) -> str:
        """Submit, wait, return the command's output."""
        return self.wait(self.submit(argv, stdin_text), timeout).output

    def _read(self) -> None:
        make_realtime()  # an acknowledgement must be read (and time-stamped) when it arrives
        fd = self.proc.stdout.fileno()
        buf = b""
        out: list[str] = []
        while True:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            now = time.monotonic()
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace")
                if line.startswith(_MARK):
                    _, seq_s, rc_s = line.split()
                    seq = int(seq_s)
                    with self._cond:
                        cmd = self._cmds.pop(seq, "?")
                        text = "\n".join(out).strip()
                        self._acks[seq] = Ack(seq, cmd, int(rc_s), text, now)
                        self._cond.notify_all()
                    out = []
                else:
                    out.append(line)
        with self._cond:
            self._cond.notify_all()

    def close(self, timeout: float = 3.0) -> None:
        """Ask the shell to exit, then force it; bounded."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"exit\n")
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self._reader.join(timeout)
