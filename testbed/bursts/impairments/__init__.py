"""Impairment mechanisms behind one interface (base.Impairment), one module per mechanism.

- ``iptables``: loss by `iptables-legacy -m statistic` (random / nth), in place with `-R`.
- ``nft``: loss by nft `numgen random|inc`, in place with `replace rule`.
- ``netem``: loss and delay as the leaf under the HTB class (kernels with sch_netem).
- ``squeeze``: the HTB class rate, changed in place.
- ``incast``: paced UDP senders on idle hosts, triggered over a pipe.

All kernel changes go through one long-lived shell per namespace (``applier``). `MECHANISMS`
is the registry: a new mechanism is one class (with its `kinds`) plus one line there.
"""

from testbed.base.capabilities import Capabilities
from testbed.bursts.impairments.base import Egress, Impairment, Site, Ticket, egress_of
from testbed.bursts.impairments.incast import IncastSenders
from testbed.bursts.impairments.iptables import IptablesLoss
from testbed.bursts.impairments.netem import NetemLeaf
from testbed.bursts.impairments.nft import NftLoss
from testbed.bursts.impairments.squeeze import HtbSqueeze

#: Every mechanism by name. Loss has several (the run's choice, `--impair`); every other
#: kind has exactly one (delay: netem's leaf, which then carries loss too).
MECHANISMS: dict[str, type[Impairment]] = {
    "netem": NetemLeaf,
    "iptables": IptablesLoss,
    "nft": NftLoss,
    "squeeze": HtbSqueeze,
    "incast": IncastSenders,
}
#: The names a run may choose for loss (`--impair`, besides "auto").
LOSS_BACKENDS: tuple[str, ...] = tuple(n for n, cls in MECHANISMS.items() if "loss" in cls.kinds)


def mechanism_for(kind: str, backend: str) -> type[Impairment]:
    """The mechanism that plays events of `kind` when loss goes through `backend`."""
    if backend not in LOSS_BACKENDS:
        raise ValueError(f"impairment backend {backend!r}: use {', '.join(LOSS_BACKENDS)}")
    if kind == "loss":
        return MECHANISMS[backend]
    serving = [cls for cls in MECHANISMS.values() if kind in cls.kinds]
    if len(serving) != 1:
        raise ValueError(f"event kind {kind!r}: {len(serving)} mechanisms play it, need one")
    return serving[0]


def choose_impairment(requested: str, caps: Capabilities) -> tuple[str, str]:
    """(backend, reason) for the loss mechanism; an unavailable explicit choice is an error.

    The backends are the registry's (`LOSS_BACKENDS`), "auto" takes the
    first that works here, in the registry's order; each mechanism says which capability it
    needs and what installs it."""
    loss = {name: MECHANISMS[name] for name in LOSS_BACKENDS}
    have = {name: bool(getattr(caps, cls.needs)) for name, cls in loss.items()}
    if requested == "auto":
        for i, (name, cls) in enumerate(loss.items()):
            if have[name]:
                return name, "".join(f"no {n}; " for n in LOSS_BACKENDS[:i]) + cls.works
        raise ValueError(
            "no loss backend works on this machine: install one of "
            + "; or ".join(cls.fix for cls in loss.values())
        )
    if requested not in have:
        raise ValueError(
            f"unknown impairment backend {requested!r}: auto, {', '.join(LOSS_BACKENDS)}"
        )
    if not have[requested]:
        raise ValueError(
            f"--impair {requested} is unavailable here: it needs {loss[requested].fix}; "
            "or use --impair auto"
        )
    return requested, f"requested explicitly; {requested} works on this kernel"


__all__ = [
    "LOSS_BACKENDS",
    "MECHANISMS",
    "Egress",
    "Impairment",
    "Site",
    "Ticket",
    "choose_impairment",
    "egress_of",
    "mechanism_for",
]
