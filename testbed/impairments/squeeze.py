"""Capacity squeeze: the link's HTB class rate changed in place (`tc class change`, ~1.5 ms).

Queued packets stay queued; what the squeeze costs shows up as drops of the pfifo leaf.
"""

from __future__ import annotations

from collections.abc import Sequence

from testbed import shaping
from testbed.impairments.base import Egress, Impairment, Ticket, shell_ticket
from testbed.impairments.tc_stats import leaf_drops
from testbed.schedule import Event

__all__ = ["HtbSqueeze"]


class HtbSqueeze(Impairment):
    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None:
        self._egresses = {e.direction: e for e in egresses}
        self._squeezed: set[str] = set()

    def apply(self, egress: Egress, value: float, event: Event) -> Ticket:
        self._squeezed.add(egress.direction)
        cmd = shaping.rate_change_command(egress.intf, egress.mbps * value)
        return shell_ticket(self.shell(egress.node), [cmd])

    def revert(self, egress: Egress, kind: str) -> Ticket:
        self._squeezed.discard(egress.direction)
        cmd = shaping.rate_change_command(egress.intf, egress.mbps)
        return shell_ticket(self.shell(egress.node), [cmd])

    def drops(self, egress: Egress) -> int:
        out = self.shell(egress.node).run(["tc", "-s", "qdisc", "show", "dev", egress.intf])
        return leaf_drops(out)

    def close(self) -> None:
        for direction in list(self._squeezed):
            self.revert(self._egresses[direction], "squeeze").wait()
