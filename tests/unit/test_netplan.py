"""The per-namespace plan of a live network, checked without root."""

import dataclasses

import pytest

from testbed.network.netplan import hash_seed, mac, node_plans, veth_commands
from topologies import fattree


def test_veths_are_born_in_their_namespaces():
    t = fattree(4)
    cmds = veth_commands(t, {n.name: i + 100 for i, n in enumerate(t.nodes)})
    assert len(cmds) == 48
    first = cmds[0]
    assert first[first.index("name") + 1] == "h1-eth0"
    assert first.count("netns") == 2 and "peer" in first
    macs = [c[c.index("address") + 1] for c in cmds] + [
        c[len(c) - 1 - c[::-1].index("address") + 1] for c in cmds
    ]
    assert len(set(macs)) == 96


def test_router_and_host_plans():
    plans = node_plans(fattree(4), seed=3, tcp_rto_min_ms=5)
    r = plans["r_e0_0"]
    sysctls = dict(r.sysctls)
    assert sysctls["net.ipv4.ip_forward"] == "1"
    assert sysctls["net.ipv4.fib_multipath_hash_policy"] == "1"
    assert sysctls["net.ipv4.fib_multipath_hash_seed"] == str(hash_seed(3, "r_e0_0"))
    assert sysctls["net.ipv4.conf.r_e0_0-eth2.rp_filter"] == "0"
    ecmp = [c for c in r.ip if c[:3] == ("ip", "route", "add") and "nexthop" in c]
    assert len(ecmp) == 7 and all(c.count("nexthop") == 2 for c in ecmp)
    assert len(r.tc) == 3 * 4
    h = plans["h1"]
    assert dict(h.sysctls)["net.ipv4.tcp_rto_min_us"] == "5000"
    assert ("ip", "route", "add", "default", "via", "10.0.0.1", "dev", "h1-eth0", "onlink") in h.ip
    fallback = node_plans(fattree(2), tcp_rto_min_ms=5, have_rto_sysctl=False)["h1"]
    assert any("rto_min" in c for c in fallback.ip)
    assert "net.ipv4.fib_multipath_hash_seed" not in dict(
        node_plans(fattree(2), have_hash_seed=False)["r_e0_0"].sysctls
    )


def test_hash_seed_is_deterministic_and_never_zero():
    assert hash_seed(1, "r_e0_0") == hash_seed(1, "r_e0_0") != hash_seed(2, "r_e0_0")
    assert hash_seed(1, "r_e0_0") != hash_seed(1, "r_a0_0")  # no polarization across tiers
    assert all(hash_seed(s, "r_c0_0") != 0 for s in range(1000))
    assert mac(0x010203, 1) == "02:db:01:02:03:01"


def test_delay_needs_netem_and_becomes_a_netem_leaf():
    t = fattree(2)
    slow = dataclasses.replace(
        t, links=(dataclasses.replace(t.links[0], delay_ms=2.0), *t.links[1:])
    )
    with pytest.raises(ValueError, match="sch_netem"):
        node_plans(slow)
    leaf = node_plans(slow, have_netem=True)["h1"].tc[-1]
    assert leaf[-5:] == ("netem", "limit", "50", "delay", "2ms")


def test_every_interface_of_hosts_and_routers_gets_the_mtu():
    plans = node_plans(fattree(4), mtu=9000)
    for plan in (plans["h1"], plans["r_e0_0"], plans["r_c0_0"]):
        ups = [c for c in plan.ip if c[:3] == ("ip", "link", "set") and c[3] != "lo"]
        assert {c[3] for c in ups} == set(plan.intfs)
        assert all(c[4:] == ("mtu", "9000", "up") for c in ups)
