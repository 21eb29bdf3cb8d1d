"""Reading a leaf qdisc's drop counter from `tc -s qdisc show`."""

from __future__ import annotations

import re

__all__ = ["leaf_drops"]

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
