"""Loss by `iptables-legacy -m statistic` (random or nth) in the egress node's namespace.

Per namespace: chain ``dblp_loss`` jumped to from FORWARD (routers) or OUTPUT (hosts), holding
the exemptions then one rule per egress interface; each rule jumps to its own ``dblp_dN`` chain
whose single DROP rule counts the drops (replacing a rule with `-R` resets that rule's counters,
the DROP rule behind it is never replaced). Rules are installed at probability 0 and changed in
place with `-R`, all of one instant's changes in a namespace in one
`iptables-legacy-restore --noflush` (one table commit). Every packet kind is dropped, except
the iperf3 probe's control connection (TCP port 5201 whose peer is not the probe's data port
5202) and its 4-byte UDP handshake (UDP with an IP length <= 40).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from testbed.bursts.impairments.base import Egress, LossRules, Ticket, spared_tcp
from testbed.bursts.schedule.events import Event
from topologies.model import Direction

__all__ = ["IptablesLoss", "drop_counts", "exemption_specs", "loss_spec", "nth_every"]

IPT = ["iptables-legacy", "-w", "5"]
CHAIN = "dblp_loss"
PROBE_CONTROL_PORT = 5201
PROBE_DATA_PORT = 5202
HANDSHAKE_MAX_LEN = 40


def exemption_specs(spared: tuple[int, int] | None = None) -> list[list[str]]:
    """The RETURN rules at the top of the loss chain (iperf3 control and UDP handshake, and
    the transports' TCP control links when `spared`, an inclusive port range)."""
    c, d = str(PROBE_CONTROL_PORT), str(PROBE_DATA_PORT)
    specs = [
        ["-p", "tcp", "--dport", c, "!", "--sport", d, "-j", "RETURN"],
        ["-p", "tcp", "--sport", c, "!", "--dport", d, "-j", "RETURN"],
        ["-p", "udp", "-m", "length", "--length", f"0:{HANDSHAKE_MAX_LEN}", "-j", "RETURN"],
    ]
    if spared is not None:
        ports = f"{spared[0]}:{spared[1]}"
        specs += [["-p", "tcp", "--dport", ports, "-j", "RETURN"],
                  ["-p", "tcp", "--sport", ports, "-j", "RETURN"]]  # fmt: skip
    return specs


def nth_every(probability: float) -> int:
    """Every-n-th drop closest to a probability (0.2 -> every 5th packet)."""
    return max(1, round(1.0 / probability))


def loss_spec(intf: str, drop_chain: str, probability: float, mode: str) -> list[str]:
    """The per-egress rule body: drop with `probability` (random) or every n-th packet."""
    if mode == "nth" and probability > 0:
        stat = ["--mode", "nth", "--every", str(nth_every(probability)), "--packet", "0"]
    else:
        stat = ["--mode", "random", "--probability", f"{probability:.10f}"]
    return ["-o", intf, "-m", "statistic", *stat, "-j", drop_chain]


def drop_counts(listing: str) -> dict[str, int]:
    """Packets counted by each dblp_dN chain's DROP rule in `iptables -L -v -x -n` output.

    Text on purpose: iptables (legacy or nft-backed) has no JSON output; `-L -v -x -n` is
    its stable, exact-counter listing."""
    out: dict[str, int] = {}
    lines = listing.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Chain dblp_d") and i + 2 < len(lines):
            out[line.split()[1]] = int(lines[i + 2].split()[0])
    return out


class IptablesLoss(LossRules):
    needs = "iptables_statistic"
    works = "iptables-legacy -m statistic works (~1.5 ms/change)"
    fix = "iptables-legacy with the xt_statistic match (apt-get install iptables)"
    batch_argv = ("iptables-legacy-restore", "-w", "5", "--noflush")
    batch_head, batch_tail = "*filter\n", "\nCOMMIT\n"

    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None:
        self._rule: dict[str, tuple[int, str]] = {}  # direction -> (rule number, drop chain)
        self._created: list[tuple[str, str]] = []  # (node, chain), in creation order
        self._hooked: list[tuple[str, str]] = []  # (node, FORWARD | OUTPUT)
        per_node: dict[str, list[Egress]] = {}
        for e in egresses:
            per_node.setdefault(e.node, []).append(e)
        exempt = exemption_specs(spared_tcp(events))
        for node, egs in per_node.items():
            sh = self.shell(node)
            sh.run([*IPT, "-N", CHAIN])
            self._created.append((node, CHAIN))
            for spec in exempt:
                sh.run([*IPT, "-A", CHAIN, *spec])
            for i, e in enumerate(egs):
                drop = f"dblp_d{i}"
                sh.run([*IPT, "-N", drop])
                self._created.append((node, drop))
                sh.run([*IPT, "-A", drop, "-j", "DROP"])
                sh.run([*IPT, "-A", CHAIN, *loss_spec(e.intf, drop, 0.0, "random")])
                self._rule[e.direction] = (len(exempt) + 1 + i, drop)
            hook = "OUTPUT" if egs[0].is_host else "FORWARD"
            sh.run([*IPT, "-I", hook, "1", "-j", CHAIN])
            self._hooked.append((node, hook))

    def _replace(self, egress: Egress, probability: float, mode: str) -> Ticket:
        num, drop = self._rule[egress.direction]
        spec = loss_spec(egress.intf, drop, probability, mode)
        return self._queue(egress.node, shlex.join(["-R", CHAIN, str(num), *spec]))

    def drops_many(self, egresses: Sequence[Egress]) -> dict[Direction, int]:
        """One `iptables-legacy -L` per namespace, all namespaces in parallel."""
        nodes = list(dict.fromkeys(e.node for e in egresses))
        seqs = {n: self.shell(n).submit([*IPT, "-L", "-v", "-x", "-n"]) for n in nodes}
        listing = {n: drop_counts(self.shell(n).wait(seq).output) for n, seq in seqs.items()}
        return {e.direction: listing[e.node][self._rule[e.direction][1]] for e in egresses}

    def close(self) -> None:
        """Unhook, flush, delete: in that order, since a referenced chain cannot be deleted."""
        for node, hook in self._hooked:
            self.shell(node).run([*IPT, "-D", hook, "-j", CHAIN])
        for action in ("-F", "-X"):
            for node, chain in self._created:
                self.shell(node).run([*IPT, action, chain])
        self._hooked, self._created, self._rule = [], [], {}
