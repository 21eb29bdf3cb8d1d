"""Incast: paced UDP senders on idle hosts, started in `prepare`, triggered over their stdin.

One `testbed/bursts/incast_sender.py` process per sender host runs for the whole run; an event is a
`start DST MBPS` line to each of its senders (and `stop DST` at its end), acknowledged on the
sender's stdout. The effect shows as drops of the target downlink's pfifo leaf.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from testbed.base.kernel import KernelError
from testbed.bursts.impairments.applier import ShellApplier
from testbed.bursts.impairments.base import Egress, Impairment, Site, Ticket
from testbed.bursts.impairments.tc_stats import read_leaf_drops
from testbed.bursts.schedule.events import Event
from topologies.model import Direction

__all__ = ["IncastSenders", "SenderProcess"]

SENDER = Path(__file__).resolve().parent.parent / "incast_sender.py"


class SenderProcess:
    """One incast_sender.py in a host, with acknowledged commands."""

    def __init__(self, popen: subprocess.Popen, host: str) -> None:
        self.proc, self.host = popen, host
        line = self._readline(10.0)
        if line != "ready":
            raise KernelError(f"incast sender on {host}", -1, f"did not start: {line!r}")

    def _readline(self, timeout: float) -> str:
        import select

        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise KernelError(f"incast sender on {self.host}", -1, f"silent for {timeout:g} s")
        return self.proc.stdout.readline().decode().strip()

    def send(self, line: str) -> None:
        try:
            self.proc.stdin.write(f"{line}\n".encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise KernelError(f"incast sender on {self.host}: {line}", -1, str(e)) from None

    def reply(self, timeout: float = 2.0) -> tuple[str, float]:
        """The next acknowledgement and its CLOCK_MONOTONIC arrival time."""
        reply = self._readline(timeout)
        if not reply.startswith("ok"):
            raise KernelError(f"incast sender on {self.host}", -1, reply)
        return reply, time.monotonic()

    def close(self, timeout: float = 3.0) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout)


class IncastSenders(Impairment):
    kinds = ("incast",)

    def __init__(
        self,
        shells: Callable[[str], ShellApplier],
        spawn: Callable[[str, list[str]], subprocess.Popen],
        host_ip: Callable[[str], str],
    ) -> None:
        super().__init__(shells)
        self._spawn, self._ip = spawn, host_ip

    @classmethod
    def on(cls, site: Site) -> IncastSenders:
        return cls(site.shell, site.spawn, site.net.topo.host_ip)

    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None:
        hosts = sorted({s for e in events for s, _ in e.params["pairs"]})
        self.senders: dict[str, SenderProcess] = {}
        self._active: dict[str, list[tuple[str, str]]] = {}
        for h in hosts:
            self.senders[h] = SenderProcess(self._spawn(h, [sys.executable, str(SENDER)]), h)

    def _send(self, lines: list[tuple[str, str]]) -> Ticket:
        # Write every sender's line first, then collect: the senders act in parallel.
        for s, line in lines:
            self.senders[s].send(line)
        times = [self.senders[s].reply()[1] for s, _ in lines]
        return Ticket([lambda t=t: t for t in times])

    def apply(self, egress: Egress, value: float, event: Event) -> Ticket:
        pairs = [tuple(p) for p in event.params["pairs"]]
        rate = event.params["mbps_per_sender"] * value / event.magnitude
        gone = [p for p in self._active.get(egress.direction, []) if p not in pairs]
        self._active[egress.direction] = pairs
        lines = [(s, f"stop {self._ip(d)}") for s, d in gone]
        lines += [(s, f"start {self._ip(d)} {rate:.3f}") for s, d in pairs]
        return self._send(lines)

    def revert(self, egress: Egress, kind: str) -> Ticket:
        pairs = self._active.pop(egress.direction, [])
        return self._send([(s, f"stop {self._ip(d)}") for s, d in pairs])

    def drops(self, egress: Egress) -> int:
        return self.drops_many([egress])[egress.direction]

    def drops_many(self, egresses: Sequence[Egress]) -> dict[Direction, int]:
        return read_leaf_drops(self.shell, egresses)

    def close(self) -> None:
        for direction in list(self._active):
            self._active.pop(direction)
        for sender in self.senders.values():
            sender.close()
        self.senders = {}
