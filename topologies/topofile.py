"""`--topo-file FILE.toml`: a custom topology, validated with errors that name the bad entry.

    name = "triangle"
    [defaults]            # optional: applied to links that omit them
    mbps = 100
    queue = 50
    [[nodes]]
    name = "r1"
    kind = "router"       # host | router
    tier = "edge"         # edge | aggregation | core | leaf | spine (hosts: omit or "host")
    pod = 0               # optional
    [[nodes]]
    name = "h1"
    kind = "host"
    ip = "10.0.0.2"       # optional; hosts of one router share a /24, .1 is the gateway
    [[links]]
    a = "h1"              # a is the end nearer the hosts
    b = "r1"
    mbps = 100            # optional with [defaults]
    queue = 50
    delay_ms = 0

Hosts without `ip` get 10.X.Y.(i+2) with X.Y numbering their access routers in file order.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from topologies.model import KINDS, TIERS, Link, Node, Topology, TopologyError


class TopologyFileError(TopologyError):
    """A topology file that cannot be used; the message names the file and the entry."""


_NODE_KEYS = {"name", "kind", "tier", "pod", "ip"}
_LINK_KEYS = {"a", "b", "mbps", "queue", "delay_ms"}


def load_topology_file(path: str | Path) -> Topology:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise TopologyFileError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise TopologyFileError(f"{path}: not UTF-8 text (a TOML file?)") from None
    except tomllib.TOMLDecodeError as e:
        raise TopologyFileError(f"{path}: not valid TOML: {e}") from None
    try:
        return parse_topology(data, default_name=path.stem)
    except TopologyError as e:
        raise TopologyFileError(f"{path}: {e}") from None


def parse_topology(data: dict[str, Any], default_name: str = "custom") -> Topology:
    unknown = set(data) - {"name", "defaults", "nodes", "links"}
    if unknown:
        raise TopologyFileError(f"unknown top-level key(s) {sorted(unknown)}")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict) or set(defaults) - {"mbps", "queue", "delay_ms"}:
        raise TopologyFileError("[defaults] may hold only mbps, queue, delay_ms")
    raw_nodes = _table_list(data, "nodes")
    nodes: list[Node] = []
    ips: dict[str, str] = {}
    for i, rn in enumerate(raw_nodes):
        nodes.append(_node(i, rn))
        if any(n.name == nodes[-1].name for n in nodes[:-1]):
            raise TopologyFileError(f"nodes[{i}] ({nodes[-1].name!r}): duplicate node name")
        if "ip" in rn:
            if nodes[-1].kind != "host":
                raise TopologyFileError(f"nodes[{i}] ({rn['name']!r}): only hosts take an ip")
            ips[rn["name"]] = _typed(f"nodes[{i}] ({rn['name']!r}).ip", rn["ip"], str)
    links = [_link(i, rl, defaults) for i, rl in enumerate(_table_list(data, "links"))]
    names = {n.name for n in nodes}
    for i, lk in enumerate(links):
        for end in (lk.a, lk.b):
            if end not in names:
                raise TopologyFileError(f"links[{i}] ({lk.name}): unknown node {end!r}")
    _check_connected(nodes, links)
    addrs = _assign_addresses(nodes, links, ips)
    name = _typed("name", data.get("name", default_name), str)
    return Topology(name, tuple(nodes), tuple(links), tuple(addrs), (("file", True),))


def _check_connected(nodes: list[Node], links: list[Link]) -> None:
    """Every node reachable from the first: a network in pieces has hosts no route reaches."""
    peers: dict[str, list[str]] = {n.name: [] for n in nodes}
    for lk in links:
        peers[lk.a].append(lk.b)
        peers[lk.b].append(lk.a)
    seen = {nodes[0].name}
    todo = [nodes[0].name]
    while todo:
        for peer in peers[todo.pop()]:
            if peer not in seen:
                seen.add(peer)
                todo.append(peer)
    apart = [n.name for n in nodes if n.name not in seen]
    if apart:
        shown = ", ".join(apart[:5]) + (f" (+{len(apart) - 5} more)" if len(apart) > 5 else "")
        raise TopologyFileError(f"disconnected: no path from {nodes[0].name!r} to {shown}")


def _table_list(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = data.get(key)
    if not isinstance(items, list) or not items:
        raise TopologyFileError(f"needs at least one [[{key}]] entry")
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise TopologyFileError(f"{key}[{i}]: must be a table")
    return items


def _typed(where: str, value: Any, *types: type) -> Any:
    if isinstance(value, bool) and bool not in types:
        raise TopologyFileError(f"{where}: expected {'/'.join(t.__name__ for t in types)}")
    if not isinstance(value, types):
        raise TopologyFileError(
            f"{where}: expected {'/'.join(t.__name__ for t in types)}, got {value!r}"
        )
    return value


def _node(i: int, rn: dict[str, Any]) -> Node:
    if "name" not in rn:
        raise TopologyFileError(f"nodes[{i}]: missing 'name'")
    name = _typed(f"nodes[{i}].name", rn["name"], str)
    where = f"nodes[{i}] ({name!r})"
    extra = set(rn) - _NODE_KEYS
    if extra:
        raise TopologyFileError(f"{where}: unknown key(s) {sorted(extra)}")
    kind = rn.get("kind")
    if kind not in KINDS:
        raise TopologyFileError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    tier = rn.get("tier", "host" if kind == "host" else None)
    if tier not in TIERS:
        raise TopologyFileError(f"{where}: tier must be one of {TIERS}, got {tier!r}")
    pod = rn.get("pod")
    if pod is not None:
        _typed(f"{where}.pod", pod, int)
    return Node(name, kind, tier, pod)


def _link(i: int, rl: dict[str, Any], defaults: dict[str, Any]) -> Link:
    where = f"links[{i}]"
    extra = set(rl) - _LINK_KEYS
    if extra:
        raise TopologyFileError(f"{where}: unknown key(s) {sorted(extra)}")
    merged = {**defaults, **rl}
    for key in ("a", "b", "mbps", "queue"):
        if key not in merged:
            raise TopologyFileError(f"{where}: missing {key!r} (and no [defaults] value)")
    a = _typed(f"{where}.a", merged["a"], str)
    b = _typed(f"{where}.b", merged["b"], str)
    where = f"links[{i}] ({a}-{b})"
    mbps = float(_typed(f"{where}.mbps", merged["mbps"], int, float))
    queue = _typed(f"{where}.queue", merged["queue"], int)
    delay = float(_typed(f"{where}.delay_ms", merged.get("delay_ms", 0.0), int, float))
    try:
        return Link(a, b, mbps, queue, delay)
    except TopologyError as e:
        raise TopologyFileError(f"{where}: {e}") from None


def _assign_addresses(
    nodes: list[Node], links: list[Link], ips: dict[str, str]
) -> list[tuple[str, str]]:
    kinds = {n.name: n.kind for n in nodes}
    access: dict[str, list[str]] = {}
    for lk in links:
        for h, r in ((lk.a, lk.b), (lk.b, lk.a)):
            if kinds[h] == "host" and kinds[r] == "router":
                access.setdefault(r, []).append(h)
    out: dict[str, str] = dict(ips)
    for idx, (_router, hosts) in enumerate(access.items()):
        auto = [h for h in hosts if h not in ips]
        for j, h in enumerate(auto):
            out[h] = f"10.{idx // 256}.{idx % 256}.{j + 2}"
    return [(n.name, out[n.name]) for n in nodes if n.kind == "host" and n.name in out]
