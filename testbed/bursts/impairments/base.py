"""The one interface every impairment mechanism implements, and the link direction it acts on.

A mechanism installs its hooks at zero effect in `prepare` (before the run), then changes them
in place: `apply(egress, value, event)` sets the composed set-point, `revert(egress, kind)`
restores the base of that kind. Both return a Ticket; `flush()` sends what they queued (one
process per namespace for the mechanisms that batch), and `Ticket.wait()` gives the
CLOCK_MONOTONIC time the change took effect. `drops(egress)` reads the cumulative drop counter
the mechanism's effect shows up in; `close` removes everything. A mechanism names the event
kinds it serves (`kinds`) and is made for a live network by `on(site)`.
"""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from testbed.bursts.impairments.applier import ShellApplier
from testbed.bursts.schedule.events import Event
from topologies.model import Direction

__all__ = ["Batch", "Egress", "Impairment", "Site", "Ticket", "egress_of", "shell_ticket"]


@dataclass(frozen=True)
class Egress:
    """The egress of ``node`` towards ``peer``: interface ``intf`` in node's namespace."""

    node: str
    peer: str
    intf: str
    mbps: float
    queue: int
    is_host: bool

    @property
    def direction(self) -> Direction:
        return Direction(self.node, self.peer)


def egress_of(topo, direction: Direction) -> Egress:
    node, peer = direction.src, direction.dst
    link = topo.link(node, peer)
    is_host = topo.node(node).kind == "host"
    return Egress(node, peer, topo.intf(node, peer), link.mbps, link.queue, is_host)


class Ticket:
    """A submitted change; `wait()` returns when (CLOCK_MONOTONIC) it took effect."""

    def __init__(self, waits: Sequence[Callable[[], float]]) -> None:
        self._waits = list(waits)

    def wait(self) -> float:
        return max((w() for w in self._waits), default=float("nan"))


def shell_ticket(shell: ShellApplier, argvs: Sequence[Sequence[str]]) -> Ticket:
    """Submit commands to one shell; the ticket waits for the last acknowledgement."""
    seqs = [shell.submit(a) for a in argvs]
    return Ticket([lambda s=s: shell.wait(s).t_s for s in seqs])


class _Pending:
    """One namespace's batch: submitted at flush, acknowledged once, waited on by many."""

    def __init__(self) -> None:
        self.shell: ShellApplier | None = None
        self.seq: int | None = None
        self.t_s: float | None = None

    def wait(self) -> float:
        if self.t_s is None:
            if self.shell is None or self.seq is None:
                raise RuntimeError("a batched change was waited on before flush()")
            self.t_s = self.shell.wait(self.seq).t_s
        return self.t_s


class Batch:
    """Changes of one instant grouped per namespace into one process (one table commit).

    `argv` reads the lines on stdin (`iptables-legacy-restore --noflush`, `nft -f -`,
    `tc -batch -`); `head`/`tail` wrap them (e.g. `*filter` ... `COMMIT`).
    """

    def __init__(
        self, shells: Callable[[str], ShellApplier], argv: list[str], head: str = "", tail: str = ""
    ) -> None:
        self.shells, self.argv, self.head, self.tail = shells, argv, head, tail
        self._lines: dict[str, list[str]] = {}
        self._pending: dict[str, _Pending] = {}

    def add(self, node: str, line: str) -> Ticket:
        self._lines.setdefault(node, []).append(line)
        return Ticket([self._pending.setdefault(node, _Pending()).wait])

    def flush(self) -> None:
        for node, lines in self._lines.items():
            sh, pending = self.shells(node), self._pending[node]
            pending.shell = sh
            pending.seq = sh.submit(self.argv, stdin_text=self.head + "\n".join(lines) + self.tail)
        self._lines, self._pending = {}, {}


class Site(Protocol):
    """What a mechanism acts through on a live network (the burst scheduler is one)."""

    net: Any  # testbed.network.live.LiveNetwork

    def shell(self, node: str) -> ShellApplier: ...

    def spawn(self, host: str, argv: list[str]) -> subprocess.Popen: ...


class Impairment(ABC):
    """One mechanism for one event kind (netem serves two: loss and delay)."""

    #: The event kinds this mechanism can play.
    kinds: ClassVar[tuple[str, ...]] = ()
    #: True when the drop counter cannot move while the mechanism is at its base (a loss rule
    #: at probability 0); queue-drop counters (squeeze, incast) also count ordinary congestion.
    still_when_idle: bool = False
    #: A loss backend names the `capabilities.Capabilities` field that says it works here
    #: (`needs`), what it costs once chosen (`works`) and what installs it (`fix`);
    #: `choose_impairment` (in the package) reads them, in `LOSS_BACKENDS` order.
    needs: ClassVar[str] = ""
    works: ClassVar[str] = ""
    fix: ClassVar[str] = ""

    def __init__(self, shells: Callable[[str], ShellApplier]) -> None:
        self.shell = shells  # node name -> that namespace's shell

    @classmethod
    def on(cls, site: Site) -> Impairment:
        """This mechanism on the site's network; one that needs more than shells overrides it."""
        return cls(site.shell)

    @abstractmethod
    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None: ...

    @abstractmethod
    def apply(self, egress: Egress, value: float, event: Event) -> Ticket: ...

    @abstractmethod
    def revert(self, egress: Egress, kind: str) -> Ticket: ...

    @abstractmethod
    def drops(self, egress: Egress) -> int: ...

    def flush(self) -> None:  # noqa: B027 - optional hook: most mechanisms send at once
        """Send what apply/revert queued (mechanisms that batch per namespace override this)."""

    def drops_many(self, egresses: Sequence[Egress]) -> dict[Direction, int]:
        """Counters of many egresses, by direction (overridden to read a namespace at once)."""
        return {e.direction: self.drops(e) for e in egresses}

    @abstractmethod
    def close(self) -> None: ...


class BatchedImpairment(Impairment):
    """A mechanism whose changes of one instant go out as one process per namespace.

    Subclasses name the batch reader (`batch_argv`, with `batch_head`/`batch_tail`) and
    queue lines with `_queue`; `flush` sends them, and per-egress `drops` reads through
    `drops_many`, which subclasses implement to list a namespace's counters at once.
    """

    batch_argv: tuple[str, ...] = ()
    batch_head: str = ""
    batch_tail: str = ""

    def _queue(self, node: str, line: str) -> Ticket:
        if not hasattr(self, "_batch"):
            argv = list(self.batch_argv)
            self._batch = Batch(self.shell, argv, self.batch_head, self.batch_tail)
        return self._batch.add(node, line)

    def flush(self) -> None:
        if hasattr(self, "_batch"):
            self._batch.flush()

    def drops(self, egress: Egress) -> int:
        return self.drops_many([egress])[egress.direction]


class LossRules(BatchedImpairment):
    """Firewall loss rules: installed at probability 0, rewritten in place per event."""

    kinds = ("loss",)
    still_when_idle = True

    @abstractmethod
    def _replace(self, egress: Egress, probability: float, mode: str) -> Ticket: ...

    def apply(self, egress: Egress, value: float, event: Event) -> Ticket:
        return self._replace(egress, value, event.params.get("mode", "random"))

    def revert(self, egress: Egress, kind: str) -> Ticket:
        return self._replace(egress, 0.0, "random")


def spared_tcp(events: Sequence[Event]) -> tuple[int, int] | None:
    """The TCP port range (inclusive) the loss rules must let through: the transports' control
    links, when a round-aligned stream spares them (`spare_control`), else None."""
    ranges = {tuple(e.params["spare_tcp"]) for e in events if e.params.get("spare_tcp")}
    if len(ranges) > 1:
        raise ValueError(f"events spare different TCP port ranges: {sorted(ranges)}")
    return ranges.pop() if ranges else None
