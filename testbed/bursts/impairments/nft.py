"""Loss by nft `numgen random|inc` in the egress node's namespace.

Per namespace: table ``ip dblp_loss`` with a forward (routers) or output (hosts) base chain,
the same exemptions as the iptables mechanism, and one rule per egress interface that counts
into a named counter (named counters survive `replace rule`, rule counters do not). Each change
is an `nft replace rule`; one instant's changes in a namespace go in one `nft -f -` transaction
(every nf_tables commit costs ~16 ms here; target <= 50 ms median).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from testbed.bursts.impairments.base import Egress, LossRules, Ticket, spared_tcp
from testbed.bursts.impairments.iptables import (
    HANDSHAKE_MAX_LEN,
    PROBE_CONTROL_PORT,
    PROBE_DATA_PORT,
    nth_every,
)
from testbed.bursts.schedule.events import Event
from topologies.model import Direction

__all__ = ["NftLoss", "counter_packets", "echoed_handle", "loss_expr"]

TABLE = ["ip", "dblp_loss"]
#: numgen random resolution: probabilities are rounded to 1e-6
SCALE = 1_000_000


def _chain(is_host: bool) -> str:
    return "output_loss" if is_host else "forward_loss"  # "fwd" is an nft keyword


def loss_expr(intf: str, counter: str, probability: float, mode: str) -> list[str]:
    """The per-egress rule body as nft argv words."""
    if mode == "nth" and probability > 0:
        gen = ["numgen", "inc", "mod", str(nth_every(probability)), "==", "0"]
    else:
        gen = ["numgen", "random", "mod", str(SCALE), "<", str(round(probability * SCALE))]
    return ["oifname", f'"{intf}"', *gen, "counter", "name", f'"{counter}"', "drop"]


def _objects(nft_json: str, what: str) -> list[dict]:
    """The `nftables` array of `nft -j` output (libnftables' JSON schema)."""
    try:
        return json.loads(nft_json)["nftables"]
    except (json.JSONDecodeError, TypeError, KeyError):
        raise ValueError(f"{what} printed no nftables JSON: {nft_json!r}") from None


def counter_packets(listing: str) -> dict[str, int]:
    """Packets per named counter in `nft -j list counters` output."""
    counters = (o["counter"] for o in _objects(listing, "nft -j list counters") if "counter" in o)
    return {c["name"]: int(c["packets"]) for c in counters}


def echoed_handle(echo: str) -> str:
    """The handle of the rule `nft -j --echo --handle add rule ...` added."""
    for o in _objects(echo, "nft -j --echo add rule"):
        rule = o.get("add", {}).get("rule")
        if rule is not None and "handle" in rule:
            return str(rule["handle"])
    raise ValueError(f"nft echoed no rule handle: {echo!r}")


class NftLoss(LossRules):
    needs = "nft_numgen"
    works = "nft numgen works (~16 ms/change)"
    fix = "nftables with numgen (apt-get install nftables; kernel CONFIG_NFT_NUMGEN)"
    batch_argv = ("nft", "-f", "-")

    def prepare(self, egresses: Sequence[Egress], events: Sequence[Event]) -> None:
        self._rule: dict[str, tuple[str, str, str]] = {}  # direction -> (chain, handle, counter)
        self._nodes: list[str] = []
        per_node: dict[str, list[Egress]] = {}
        for e in egresses:
            per_node.setdefault(e.node, []).append(e)
        c, d = str(PROBE_CONTROL_PORT), str(PROBE_DATA_PORT)
        exempt = [
            ["tcp", "dport", c, "tcp", "sport", "!=", d, "return"],
            ["tcp", "sport", c, "tcp", "dport", "!=", d, "return"],
            ["ip", "protocol", "udp", "ip", "length", f"0-{HANDSHAKE_MAX_LEN}", "return"],
        ]
        if (spared := spared_tcp(events)) is not None:  # the transports' TCP control links
            ports = f"{spared[0]}-{spared[1]}"
            exempt += [["tcp", "dport", ports, "return"], ["tcp", "sport", ports, "return"]]
        for node, egs in per_node.items():
            sh = self.shell(node)
            chain = _chain(egs[0].is_host)
            hook = "output" if egs[0].is_host else "forward"
            sh.run(["nft", "add", "table", *TABLE])
            self._nodes.append(node)
            sh.run(["nft", "add", "chain", *TABLE, chain,
                    f"{{ type filter hook {hook} priority 0; }}"])  # fmt: skip
            for rule in exempt:
                sh.run(["nft", "add", "rule", *TABLE, chain, *rule])
            for i, e in enumerate(egs):
                counter = f"d{i}"
                sh.run(["nft", "add", "counter", *TABLE, counter])
                out = sh.run(["nft", "-j", "--echo", "--handle", "add", "rule", *TABLE, chain,
                              *loss_expr(e.intf, counter, 0.0, "random")])  # fmt: skip
                self._rule[e.direction] = (chain, echoed_handle(out), counter)

    def _replace(self, egress: Egress, probability: float, mode: str) -> Ticket:
        chain, handle, counter = self._rule[egress.direction]
        expr = loss_expr(egress.intf, counter, probability, mode)
        line = " ".join(["replace", "rule", *TABLE, chain, "handle", handle, *expr])
        return self._queue(egress.node, line)

    def drops_many(self, egresses: Sequence[Egress]) -> dict[Direction, int]:
        """One `nft -j list counters` per namespace, all namespaces in parallel."""
        nodes = list(dict.fromkeys(e.node for e in egresses))
        argv = ["nft", "-j", "list", "counters", "table", *TABLE]
        seqs = {n: self.shell(n).submit(argv) for n in nodes}
        listing = {n: counter_packets(self.shell(n).wait(seq).output) for n, seq in seqs.items()}
        return {e.direction: listing[e.node][self._rule[e.direction][2]] for e in egresses}

    def close(self) -> None:
        for node in self._nodes:
            self.shell(node).run(["nft", "delete", "table", *TABLE])
        self._nodes, self._rule = [], {}
