"""Reading a leaf qdisc's drop counter from `tc -s qdisc show`."""

from __future__ import annotations

import re

from topologies.model import Direction

__all__ = ["leaf_drops", "leaf_drops_by_dev", "read_leaf_drops"]

_DROPPED = re.compile(r"dropped (\d+)")


def leaf_drops(tc_output: str, handle: str = "10:") -> int:
    """Drops of the qdisc with `handle` in `tc -s qdisc show dev X` output."""
    block: list[str] = []
    for line in tc_output.splitlines():
        if line.startswith("qdisc "):
            if block and f" {handle} " in block[0]:
                break
            block = [line]
        elif block:
            block.append(line)
    if not block or f" {handle} " not in block[0]:
        raise ValueError(f"no qdisc {handle} in tc output: {tc_output!r}")
    m = _DROPPED.search("\n".join(block))
    if not m:
        raise ValueError(f"no drop counter for qdisc {handle}: {block!r}")
    return int(m.group(1))


_LEAF = re.compile(r"^qdisc \S+ (\S+) dev (\S+) ")


def leaf_drops_by_dev(tc_output: str, handle: str = "10:") -> dict[str, int]:
    """Drops of every `handle` qdisc in `tc -s qdisc show` (all devices) output, by device."""
    out: dict[str, int] = {}
    dev = None
    for line in tc_output.splitlines():
        m = _LEAF.match(line)
        if m:
            dev = m.group(2) if m.group(1) == handle else None
        elif dev is not None:
            d = _DROPPED.search(line)
            if d:
                out[dev] = int(d.group(1))
                dev = None
    return out


def read_leaf_drops(shells, egresses) -> dict[Direction, int]:
    """Leaf drops of many egresses: one `tc -s qdisc show` per namespace, in parallel."""
    nodes = list(dict.fromkeys(e.node for e in egresses))
    seqs = {n: shells(n).submit(["tc", "-s", "qdisc", "show"]) for n in nodes}
    by_node = {n: leaf_drops_by_dev(shells(n).wait(seq).output) for n, seq in seqs.items()}
    return {e.direction: by_node[e.node][e.intf] for e in egresses}
