"""A run's MTU in the kernel: every interface of a small fat-tree at 9000, queues kept in bytes,
and a 9000-byte datagram crossing the tree unfragmented."""

import json

import pytest

from testbed.network.live import live_network
from testbed.network.shaping import as_played
from topologies import fattree

pytestmark = pytest.mark.require_root


def test_jumbo_mtu_on_every_interface_and_queues_in_bytes():
    topo = as_played(fattree(2, mbps=100.0, queue=50), mtu=9000)
    with live_network(topo, seed=1, mtu=9000) as net:
        for node in topo.nodes:
            links = json.loads(net.exec(node.name, ["ip", "-j", "link", "show"]))
            mtus = {x["ifname"]: x["mtu"] for x in links if x["ifname"] != "lo"}
            assert mtus and set(mtus.values()) == {9000}, (node.name, mtus)
        intf = topo.intf("r_e0_0", "h1")
        qdiscs = json.loads(net.exec("r_e0_0", ["tc", "-j", "qdisc", "show", "dev", intf]))
        (leaf,) = [q for q in qdiscs if q["kind"] == "pfifo"]
        assert leaf["options"]["limit"] == 8  # 50 x 1514 B = 8 x 9014 B
        dst = topo.host_ip(topo.hosts[-1].name)
        # 8972 B of ICMP payload + 28 B of headers = 9000: must pass with DF set
        net.exec("h1", ["ping", "-c1", "-W2", "-M", "do", "-s", "8972", dst], timeout=10)
