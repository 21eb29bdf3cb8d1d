"""Per-direction link shaping as `tc` argv lists: HTB rate, then a shallow packet-FIFO leaf.

Layout on the egress interface of each direction (what `testbed/bursts/` edits in place):

    root 1: htb default 1  ->  class 1:1 htb rate R ceil R  ->  leaf 10: pfifo limit Q

The leaf becomes netem (loss/delay, same limit) only on kernels with sch_netem. Builders are
pure, so the exact commands are unit-tested; `apply` runs them through one `tc -batch`.

`as_played` turns a spec's links into what the kernel is given: each rate divided by the run's
time dilation, each queue (packets of a 1500-byte MTU) converted to packets of the run's MTU,
so a shallow queue holds the same bytes at any MTU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from testbed.base.kernel import run_batch
from topologies import Topology
from workloads.transport.dilation import TimeDilation

# A quantum of one 1500-MTU frame: a single class needs no fairness, and it keeps HTB from
# logging "quantum of class ... is big" on every fast link. Neither it nor HTB's burst must
# grow with the MTU: HTB lets a class's tokens go negative, so a jumbo frame larger than the
# burst still leaves at the configured rate.
QUANTUM = 1514
#: The MTU a spec's `queue` is counted in, and the Ethernet header a frame adds to it.
QUEUE_MTU = 1500
ETH_HEADER = 14


def queue_limit(queue: int, mtu: int) -> int:
    """The pfifo limit, in packets of `mtu`, that holds the bytes of `queue` 1500-MTU frames:
    round(queue x 1514 / (mtu + 14)), never below 2 packets (nor below `queue` if smaller)."""
    frames = round(queue * (QUEUE_MTU + ETH_HEADER) / (mtu + ETH_HEADER))
    return max(min(2, queue), frames)


def as_played(topo: Topology, mtu: int = QUEUE_MTU, dilation: float = 1.0) -> Topology:
    """The topology as the kernel plays it: link rates / dilation, queues in packets of `mtu`."""
    dil = TimeDilation(dilation)
    if mtu == QUEUE_MTU and dilation == 1:
        return topo
    links = tuple(
        dataclasses.replace(lk, mbps=dil.played_rate(lk.mbps), queue=queue_limit(lk.queue, mtu))
        for lk in topo.links
    )
    return dataclasses.replace(topo, links=links)


def _rate(mbps: float) -> str:
    if not mbps > 0:
        raise ValueError(f"rate must be > 0 Mbit/s, got {mbps}")
    return f"{max(1, round(mbps * 1000))}kbit"


def shape_commands(intf: str, mbps: float, queue: int) -> list[list[str]]:
    """Root HTB, its single rate class 1:1, and the pfifo leaf holding `queue` packets."""
    rate = _rate(mbps)
    return [
        ["tc", "qdisc", "replace", "dev", intf, "root", "handle", "1:", "htb", "default", "1"],
        ["tc", "class", "replace", "dev", intf, "parent", "1:", "classid", "1:1",
         "htb", "rate", rate, "ceil", rate, "quantum", str(QUANTUM)],
        leaf_command(intf, queue),
    ]  # fmt: skip


def rate_change_command(intf: str, mbps: float) -> list[str]:
    """Change the link rate in place (no qdisc rebuild, queued packets stay queued)."""
    rate = _rate(mbps)
    return ["tc", "class", "change", "dev", intf, "parent", "1:", "classid", "1:1",
            "htb", "rate", rate, "ceil", rate, "quantum", str(QUANTUM)]  # fmt: skip


def leaf_command(intf: str, queue: int, loss: float = 0.0, delay_ms: float = 0.0) -> list[str]:
    """The leaf under 1:1: pfifo when there is no loss or delay, else netem with the same limit.

    `loss` is a fraction 0..1. netem exists only where the kernel has sch_netem; the caller
    decides that (impairments.choose_impairment), this builder only writes the command.
    """
    if isinstance(queue, bool) or not isinstance(queue, int) or queue < 1:
        raise ValueError(f"queue must be an integer >= 1 packet, got {queue!r}")
    if not 0.0 <= loss <= 1.0:
        raise ValueError(f"loss is a fraction in [0, 1], got {loss}")
    if delay_ms < 0:
        raise ValueError(f"delay_ms must be >= 0, got {delay_ms}")
    head = ["tc", "qdisc", "replace", "dev", intf, "parent", "1:1", "handle", "10:"]
    if loss == 0.0 and delay_ms == 0.0:
        return [*head, "pfifo", "limit", str(queue)]
    netem = [*head, "netem", "limit", str(queue)]
    if loss:
        netem += ["loss", f"{loss * 100:.6g}%"]
    if delay_ms:
        netem += ["delay", f"{delay_ms:.6g}ms"]
    return netem


def apply(commands: Sequence[Sequence[str]], prefix: Sequence[str] = (), timeout: float = 10.0):
    """Run tc commands in one `tc -batch -`; `prefix` enters a namespace (e.g. mnexec -a PID).

    Raises testbed.base.kernel.KernelError naming the failing command and the kernel's message.
    """
    run_batch(commands, "tc", prefix=prefix, timeout=timeout)
