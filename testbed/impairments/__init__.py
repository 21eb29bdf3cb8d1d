"""Impairment mechanisms behind one interface (base.Impairment), one module per mechanism.

- ``iptables``: loss by `iptables-legacy -m statistic` (random / nth), in place with `-R`.
- ``nft``: loss by nft `numgen random|inc`, in place with `replace rule`.
- ``netem``: loss and delay as the leaf under the HTB class (kernels with sch_netem).
- ``squeeze``: the HTB class rate, changed in place.
- ``incast``: paced UDP senders on idle hosts, triggered over a pipe.

All kernel changes go through one long-lived shell per namespace (``applier``).
"""

from testbed.impairments.base import Egress, Impairment, Ticket, egress_of

LOSS_BACKENDS = ("netem", "iptables", "nft")

__all__ = ["LOSS_BACKENDS", "Egress", "Impairment", "Ticket", "egress_of"]
