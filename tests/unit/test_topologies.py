"""Structure of the topology builders: counts, tiers, addresses, interface names, bad input."""

import ipaddress

import pytest

from topologies import (
    BUILDERS,
    Link,
    Node,
    Topology,
    TopologyError,
    build,
    dumbbell,
    fattree,
    leafspine,
    star,
)


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_fattree_counts(k):
    t = fattree(k)
    assert len(t.hosts) == k**3 // 4
    assert len(t.routers) == 5 * k**2 // 4
    assert len(t.links) == 3 * k**3 // 4
    tiers = [n.tier for n in t.routers]
    assert tiers.count("edge") == tiers.count("aggregation") == k * k // 2
    assert tiers.count("core") == (k // 2) ** 2
    # every router has exactly k ports; every host one
    for n in t.routers:
        assert len(t.links_of(n.name)) == k, n.name
    for n in t.hosts:
        assert len(t.links_of(n.name)) == 1


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_fattree_addresses_unique_and_in_pod_edge_subnet(k):
    t = fattree(k)
    ips = list(t.addresses.values())
    assert len(set(ips)) == len(ips) == len(t.hosts)
    for h in t.hosts:
        edge = t.access_router(h.name)
        _, p, e = edge.split("_")[0], *edge[3:].split("_")
        ip = ipaddress.IPv4Address(t.host_ip(h.name))
        assert str(ip).startswith(f"10.{p}.{e}.") and h.pod == int(p)
        assert t.gateway(h.name) == f"10.{p}.{e}.1"
    assert t.host_ip("h1") == "10.0.0.2"
    if k == 4:
        assert t.host_ip("h16") == "10.3.1.3"
        assert t.host_ip("h3") == "10.0.1.2"


def test_fattree_wiring_k4():
    t = fattree(4)
    assert set(t.neighbors("r_e0_0")) == {"h1", "h2", "r_a0_0", "r_a0_1"}
    assert set(t.neighbors("r_a1_0")) == {"r_e1_0", "r_e1_1", "r_c0_0", "r_c0_1"}
    assert {n for n in t.neighbors("r_c1_0")} == {f"r_a{p}_1" for p in range(4)}
    lk = t.link("r_a0_0", "r_e0_0")
    assert (lk.a, lk.b, lk.name) == ("r_e0_0", "r_a0_0", "r_e0_0-r_a0_0")  # a nearer the hosts
    assert t.link("h1", "r_e0_0").a == "h1"


def test_interface_names_deterministic_unique_and_short():
    t = fattree(8)
    assert t.intf("h1", "r_e0_0") == "h1-eth0"
    assert t.intf("r_e0_0", "h1") == "r_e0_0-eth0"
    assert t.intf("r_e0_0", "r_a0_0") == "r_e0_0-eth4"
    names = [t.intf(lk.a, lk.b) for lk in t.links] + [t.intf(lk.b, lk.a) for lk in t.links]
    assert len(set(names)) == len(names)
    assert max(map(len, names)) <= 15
    assert fattree(8).intf("r_c3_3", "r_a7_3") == t.intf("r_c3_3", "r_a7_3")


def test_p2p_addresses_are_distinct_31s():
    t = fattree(4)
    seen = set()
    for lk in t.links:
        if t.node(lk.a).kind == "router":
            (a, pa), (b, pb) = t.addr(lk.a, lk.b), t.addr(lk.b, lk.a)
            assert pa == pb == 31
            assert ipaddress.ip_network(f"{a}/31", strict=False) == ipaddress.ip_network(
                f"{b}/31", strict=False
            )
            seen |= {a, b}
    assert len(seen) == 2 * 32


def test_oversubscription():
    t = fattree(4, hosts_per_edge=4)
    assert len(t.hosts) == 32
    assert len(t.links_of("r_e0_0")) == 6


def test_link_params_propagate():
    t = fattree(4, mbps=10.0, queue=20)
    assert {(lk.mbps, lk.queue) for lk in t.links} == {(10.0, 20)}


@pytest.mark.parametrize("k", [0, 1, 3, 5, -2, 2.0, "4", True])
def test_fattree_bad_k(k):
    with pytest.raises(TopologyError, match="even integer"):
        fattree(k)


def test_unknown_topology_is_clear():
    with pytest.raises(TopologyError, match="unknown topology 'torus'.*fattree"):
        build("torus")
    with pytest.raises(TopologyError, match="fattree"):
        build("fattree", spines=3)


def test_registry_builds_every_topology():
    assert set(BUILDERS) == {"fattree", "leafspine", "dumbbell", "star"}
    assert build("fattree", k=4) == fattree(4)


def test_leafspine_dumbbell_star():
    ls = leafspine(4, 2, 3)
    assert len(ls.hosts) == 12 and len(ls.routers) == 6 and len(ls.links) == 12 + 8
    assert ls.host_ip("h4") == "10.0.1.2"
    db = dumbbell(3)
    assert len(db.hosts) == 6 and db.link("r_left", "r_right").mbps == 100.0
    assert db.host_ip("h4") == "10.0.1.2"
    st = star(5)
    assert len(st.hosts) == 5 and len(st.routers) == 1
    with pytest.raises(TopologyError):
        star(0)
    with pytest.raises(TopologyError):
        leafspine(0, 2, 2)


def _tiny(**over):
    base = dict(
        name="t",
        nodes=(Node("r1", "router", "edge"), Node("h1", "host", "host")),
        links=(Link("h1", "r1", 10.0, 5),),
        host_addrs=(("h1", "10.0.0.2"),),
    )
    base.update(over)
    return Topology(**base)


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"links": (Link("h1", "r9", 10.0, 5),)}, "unknown node 'r9'"),
        ({"links": (Link("h1", "r1", 0.0, 5),)}, "mbps must be > 0"),
        ({"links": (Link("h1", "r1", 10.0, 0),)}, "queue must be >= 1"),
        ({"host_addrs": (("h1", "10.0.0.1"),)}, "reserved"),
        ({"host_addrs": (("h1", "nope"),)}, "bad address"),
        ({"nodes": (Node("r1", "router", "edge"), Node("r1", "host", "host"))}, "duplicate"),
        ({"nodes": (Node("r1", "router", "moon"), Node("h1", "host", "host"))}, "tier"),
        ({"nodes": (Node("a_very_long_name", "router", "edge"),), "links": (),
          "host_addrs": ()}, "exceeds 15"),
    ],
)  # fmt: skip
def test_topology_validation_names_the_bad_entry(over, match):
    with pytest.raises(TopologyError, match=match):
        _tiny(**over)


def test_topology_is_immutable_and_json_summary():
    t = fattree(4)
    with pytest.raises(AttributeError):
        t.name = "x"
    s = t.summary()
    assert len(s["hosts"]) == 16 and len(s["routers"]) == 20
    assert s["links"][0] == ["h1", "r_e0_0", 100.0, 50]
    assert s["addresses"]["h1"] == "10.0.0.2"
