"""Loss and delay by netem as the leaf under the link's HTB class (kernels with sch_netem).

The leaf is swapped pfifo -> netem (same packet limit) while loss or delay is set, and back to
pfifo when both return to zero; the netem leaf's drop counter is read just before that swap,
since a new qdisc starts its counters at zero. netem has no every-n-th mode: nth loss needs
the iptables or nft mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence

from testbed.bursts.impairments.base import Egress, Impairment, Ticket, shell_ticket, spared_tcp
from testbed.bursts.impairments.tc_stats import QDISC_STATS, leaf_drops
from testbed.bursts.schedule.events import Event
from testbed.network import shaping
from topologies.model import Direction

__all__ = ["NetemLeaf", "check_netem", "netem_commands"]


def netem_commands(egress: Egress, loss: float, delay_ms: float) -> list[list[str]]:
    """The exact tc argv that sets (loss, delay) on an egress: one leaf replace."""
    return [shaping.leaf_command(egress.intf, egress.queue, loss=loss, delay_ms=delay_ms)]


def check_netem(caps, events: Sequence[Event]) -> None:
    """Raise naming sch_netem when the kernel lacks it, or nth loss (netem has no such mode)."""
    if not caps.netem:
        kinds = sorted({e.kind for e in events if e.kind in ("loss", "delay")})
        raise ValueError(
            f"{'/'.join(kinds) or 'netem'} events need sch_netem (the kernel's netem qdisc), "
            f"which kernel {caps.kernel} lacks; use --impair iptables or nft for loss "
            "(delay has no fallback)"
        )
    nth = [e.event_id for e in events if e.params.get("mode") == "nth"]
    if nth:
        raise ValueError(
            f"event {nth[0]}: netem has no every-n-th loss; use --impair iptables or nft"
        )


class NetemLeaf(Impairment):
    """Serves two kinds on one leaf: ``loss`` (probability) and ``delay`` (ms)."""

    kinds = ("loss", "delay")
    needs = "netem"
    works = "sch_netem works: loss and delay on the link's HTB leaf"
    fix = (
        "the kernel module sch_netem (modprobe sch_netem, or a kernel built with "
        "CONFIG_NET_SCH_NETEM)"
    )

    def __init__(self, shells, caps=None) -> None:
        super().__init__(shells)
        self._caps = caps  # capabilities.Capabilities; probed on prepare when not given

    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None:
        if self._caps is None:
            from testbed.base import capabilities

            self._caps = capabilities.probe()
        self._state: dict[str, tuple[float, float]] = {}
        self._egresses = {e.direction: e for e in egresses}
        self._counted: dict[Direction, int] = {}
        check_netem(self._caps, events)
        if spared_tcp(events) is not None:
            raise ValueError(
                "impair: netem drops every packet of a link and cannot spare the transports' "
                "TCP control links (spare_control); use --impair iptables or nft"
            )

    def _set(self, egress: Egress, loss: float, delay_ms: float) -> Ticket:
        old = self._state.get(egress.direction, (0.0, 0.0))
        self._state[egress.direction] = (loss, delay_ms)
        cmds = netem_commands(egress, loss, delay_ms)
        if old != (0.0, 0.0) and (loss, delay_ms) == (0.0, 0.0):
            self._counted[egress.direction] = self.drops(egress)
        return shell_ticket(self.shell(egress.node), cmds)

    def apply(self, egress: Egress, value: float, event: Event) -> Ticket:
        loss, delay = self._state.get(egress.direction, (0.0, 0.0))
        if event.kind == "delay":
            return self._set(egress, loss, value)
        return self._set(egress, value, delay)

    def revert(self, egress: Egress, kind: str) -> Ticket:
        loss, delay = self._state.get(egress.direction, (0.0, 0.0))
        return self._set(egress, 0.0, delay) if kind == "loss" else self._set(egress, loss, 0.0)

    def drops(self, egress: Egress) -> int:
        out = self.shell(egress.node).run([*QDISC_STATS, "dev", egress.intf])
        return self._counted.get(egress.direction, 0) + leaf_drops(out)

    def close(self) -> None:
        for direction, state in list(self._state.items()):
            if state != (0.0, 0.0):
                self._set(self._egresses[direction], 0.0, 0.0).wait()
