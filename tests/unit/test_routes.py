"""Route tables as data: ECMP up, specific down, and the path counts of a fat-tree."""

import itertools

import pytest

from topologies import equal_cost_paths, fattree, leafspine, routes, star
from topologies.routing import lookup


@pytest.mark.parametrize("k", [4, 6, 8])
def test_fattree_equal_cost_paths(k):
    t = fattree(k)
    tables = routes(t)
    half = k // 2
    by_pod = {}
    for h in t.hosts:
        by_pod.setdefault(h.pod, []).append(h.name)
    first = t.hosts[0].name
    # different pods: (k/2)^2 paths; same pod, different edge: k/2; same edge: 1
    for other_pod in range(1, k):
        assert equal_cost_paths(t, tables, first, by_pod[other_pod][-1]) == half**2
    assert equal_cost_paths(t, tables, first, by_pod[0][half]) == half
    assert equal_cost_paths(t, tables, first, by_pod[0][1]) == 1


def test_every_pair_routes_without_loops_k4():
    t = fattree(4)
    tables = routes(t)
    for a, b in itertools.permutations([h.name for h in t.hosts], 2):
        n = equal_cost_paths(t, tables, a, b)
        assert n in (1, 2, 4)


def test_edge_uplinks_are_ecmp_and_core_downlinks_specific():
    t = fattree(4)
    tables = routes(t)
    remote = [r for r in tables["r_e0_0"] if r.dst == "10.3.1.0/24"][0]
    assert {nh.peer for nh in remote.nexthops} == {"r_a0_0", "r_a0_1"}
    assert {nh.dev for nh in remote.nexthops} == {"r_e0_0-eth2", "r_e0_0-eth3"}
    assert remote.nexthops[0].via == t.addr("r_a0_0", "r_e0_0")[0]
    agg_up = lookup(tables, "r_a0_0", "10.3.1.2")
    assert {nh.peer for nh in agg_up.nexthops} == {"r_c0_0", "r_c0_1"}
    agg_down = lookup(tables, "r_a0_0", "10.0.1.2")
    assert [nh.peer for nh in agg_down.nexthops] == ["r_e0_1"]
    for r in tables["r_c0_0"]:
        assert len(r.nexthops) == 1
    host_route = lookup(tables, "r_e0_0", "10.0.0.3")
    assert host_route.dst == "10.0.0.3/32" and host_route.nexthops[0].via is None


def test_routers_hold_one_route_per_remote_subnet():
    t = fattree(4)
    tables = routes(t)
    assert len(tables) == 20
    assert len(tables["r_e0_0"]) == 2 + 7  # two attached hosts, seven other edge subnets
    assert len(tables["r_c0_0"]) == 8


def test_leafspine_and_star_routes():
    t = leafspine(3, 4, 2)
    tables = routes(t)
    assert equal_cost_paths(t, tables, "h1", "h6") == 4
    s = star(3)
    assert equal_cost_paths(s, routes(s), "h1", "h3") == 1
