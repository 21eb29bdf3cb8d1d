"""Capacity squeeze: the link's HTB class rate changed in place (`tc class change`, ~1.5 ms); one
instant's changes in a namespace go through one `tc -batch -`.

Queued packets stay queued; what the squeeze costs shows up as drops of the pfifo leaf.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from testbed.bursts.impairments.base import BatchedImpairment, Egress, Ticket
from testbed.bursts.impairments.tc_stats import read_leaf_drops
from testbed.bursts.schedule.events import Event
from testbed.network import shaping
from topologies.model import Direction

__all__ = ["HtbSqueeze"]


class HtbSqueeze(BatchedImpairment):
    kinds = ("squeeze",)
    batch_argv = ("tc", "-batch", "-")

    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None:
        self._egresses = {e.direction: e for e in egresses}
        self._squeezed: set[str] = set()

    def _rate(self, egress: Egress, mbps: float) -> Ticket:
        cmd = shaping.rate_change_command(egress.intf, mbps)
        return self._queue(egress.node, shlex.join(cmd[1:]))

    def apply(self, egress: Egress, value: float, event: Event) -> Ticket:
        self._squeezed.add(egress.direction)
        return self._rate(egress, egress.mbps * value)

    def revert(self, egress: Egress, kind: str) -> Ticket:
        self._squeezed.discard(egress.direction)
        return self._rate(egress, egress.mbps)

    def drops_many(self, egresses: Sequence[Egress]) -> dict[Direction, int]:
        return read_leaf_drops(self.shell, egresses)

    def close(self) -> None:
        tickets = [self.revert(self._egresses[d], "squeeze") for d in list(self._squeezed)]
        self.flush()
        for t in tickets:
            t.wait()
