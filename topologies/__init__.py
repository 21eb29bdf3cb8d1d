"""Pure topology descriptions, addressing and routing (no Mininet, no root).

A new topology is one builder function plus one line in `BUILDERS`.
"""

from collections.abc import Callable

from topologies.dumbbell import dumbbell
from topologies.fattree import fattree
from topologies.leafspine import leafspine
from topologies.model import Link, Node, Topology, TopologyError
from topologies.routing import NextHop, Route, equal_cost_paths, routes
from topologies.star import star
from topologies.topofile import TopologyFileError, load_topology_file

BUILDERS: dict[str, Callable[..., Topology]] = {
    "fattree": fattree,
    "leafspine": leafspine,
    "dumbbell": dumbbell,
    "star": star,
}


def build(name: str, **params: object) -> Topology:
    """Build a registered topology by name, e.g. `build("fattree", k=4)`."""
    try:
        builder = BUILDERS[name]
    except KeyError:
        raise TopologyError(
            f"unknown topology {name!r}; choose one of {sorted(BUILDERS)}"
        ) from None
    try:
        return builder(**params)
    except TypeError as e:
        raise TopologyError(f"{name}: {e}") from None


__all__ = [
    "BUILDERS",
    "Link",
    "NextHop",
    "Node",
    "Route",
    "Topology",
    "TopologyError",
    "TopologyFileError",
    "build",
    "dumbbell",
    "equal_cost_paths",
    "fattree",
    "leafspine",
    "load_topology_file",
    "routes",
    "star",
]
