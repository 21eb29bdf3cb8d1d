"""Reading a leaf qdisc's drop counter from `tc -j -s qdisc show` (JSON: one object per qdisc)."""

from __future__ import annotations

import json

from topologies.model import Direction

__all__ = ["QDISC_STATS", "leaf_drops", "leaf_drops_by_dev", "read_leaf_drops"]

#: Every qdisc of a namespace with its counters, as JSON; append `dev X` for one interface.
QDISC_STATS = ("tc", "-j", "-s", "qdisc", "show")


def _qdiscs(tc_json: str) -> list[dict]:
    try:
        qdiscs = json.loads(tc_json)
    except json.JSONDecodeError:
        raise ValueError(f"`tc -j -s qdisc show` printed no JSON: {tc_json!r}") from None
    if not isinstance(qdiscs, list):
        raise ValueError(f"`tc -j -s qdisc show` printed no list of qdiscs: {tc_json!r}")
    return qdiscs


def leaf_drops(tc_json: str, handle: str = "10:") -> int:
    """Drops of the qdisc with `handle` in `tc -j -s qdisc show dev X` output."""
    for q in _qdiscs(tc_json):
        if q.get("handle") == handle:
            if "drops" not in q:
                raise ValueError(f"no drop counter for qdisc {handle}: {q!r}")
            return int(q["drops"])
    raise ValueError(f"no qdisc {handle} in tc output: {tc_json!r}")


def leaf_drops_by_dev(tc_json: str, handle: str = "10:") -> dict[str, int]:
    """Drops of every `handle` qdisc in `tc -j -s qdisc show` (all devices) output, by device."""
    return {q["dev"]: int(q["drops"]) for q in _qdiscs(tc_json) if q.get("handle") == handle}


def read_leaf_drops(shells, egresses) -> dict[Direction, int]:
    """Leaf drops of many egresses: one `tc -j -s qdisc show` per namespace, in parallel."""
    nodes = list(dict.fromkeys(e.node for e in egresses))
    seqs = {n: shells(n).submit(QDISC_STATS) for n in nodes}
    by_node = {n: leaf_drops_by_dev(shells(n).wait(seq).output) for n, seq in seqs.items()}
    return {e.direction: by_node[e.node][e.intf] for e in egresses}
