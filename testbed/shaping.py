"""Per-direction link shaping as `tc` argv lists: HTB rate, then a shallow packet-FIFO leaf.

Layout on the egress interface of each direction (what `testbed/bursts.py` edits in place):

    root 1: htb default 1  ->  class 1:1 htb rate R ceil R  ->  leaf 10: pfifo limit Q

The leaf becomes netem (loss/delay, same limit) only on kernels with sch_netem. Builders are
pure, so the exact commands are unit-tested; `apply` runs them through one `tc -batch`.
"""

from __future__ import annotations

from collections.abc import Sequence

from testbed.kernel import run_batch

# One MTU-sized quantum: a single class needs no fairness, and it keeps HTB from logging
# "quantum of class ... is big" on every fast link.
QUANTUM = 1514


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
    decides that (capabilities.choose_impairment), this builder only writes the command.
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

    Raises testbed.kernel.KernelError naming the failing command and the kernel's message.
    """
    run_batch(commands, "tc", prefix=prefix, timeout=timeout)
