"""`ip -j route get` answers, one JSON document per line of an `ip -j -batch -` (iproute2 6.1),
and the hop-by-hop flow trace built on them (one `ip` process per node per round)."""

import shlex
from types import SimpleNamespace

import pytest

from testbed.base.kernel import json_documents, run_batch
from testbed.network import flowpaths
from topologies import dumbbell

#: `ip -j -batch -` fed two lookups on a router with an ECMP route to 10.8.0.0/24 (captured):
#:   route get 10.8.0.5 from 10.9.1.7 iif a1 ipproto udp sport 40001 dport 40003
#:   route get 10.8.0.5 from 10.9.0.1 ipproto udp sport 40000 dport 40002
BATCH = (
    '[{"dst":"10.8.0.5","from":"10.9.1.7","gateway":"10.9.0.2","dev":"a0","flags":[],'
    '"cache":[],"iif":"a1"}]\n'
    '[{"dst":"10.8.0.5","from":"10.9.0.1","gateway":"10.9.0.2","dev":"a0","flags":[],"uid":0,'
    '"cache":[]}]\n'
)
#: `ip -j route get 10.9.0.1` for a local address
LOCAL = (
    '[{"type":"local","dst":"10.9.0.1","dev":"lo","prefsrc":"10.9.0.1","flags":[],"uid":0,'
    '"cache":["local"]}]\n'
)


def test_one_document_per_batch_line():
    docs = json_documents(BATCH)
    assert len(docs) == 2
    assert [flowpaths.egress_dev(d) for d in docs] == ["a0", "a0"]
    assert docs[0][0]["iif"] == "a1"
    assert flowpaths.egress_dev(json_documents(LOCAL)[0]) == "lo"
    assert flowpaths.egress_dev([]) is None
    assert json_documents("  \n") == []
    with pytest.raises(ValueError, match="not JSON"):
        json_documents(BATCH + "10.8.0.5 via 10.9.0.2 dev a0")


def test_run_batch_passes_options_and_returns_the_output():
    fake = ["sh", "-c", 'echo "$@"; cat', "--"]  # prints its argv, then the batch script
    out = run_batch([["ip", "route", "get", "10.0.0.1"]], "ip", prefix=fake, options=["-j"])
    assert out == "ip -j -batch -\nroute get 10.0.0.1\n"


def fake_net(topo, log):
    """Each node's `ip -j -batch -` answers every lookup with its egress towards the flow's
    destination in a dumbbell (hosts send to their router, routers towards the far side)."""

    def egress(node, dst_ip):
        if node.startswith("h"):
            return f"{node}-eth0"
        right = dst_ip == topo.host_ip("h2")
        if node == "r_left":
            return topo.intf("r_left", "r_right" if right else "h1")
        return topo.intf("r_right", "h2" if right else "r_left")

    def prefix(node):
        script = (
            f"echo {node} >> {shlex.quote(str(log))}; "
            'while read -r _ _ dst _; do case "$dst" in '
            + " ".join(
                f'{ip}) echo \'[{{"dst":"{ip}","dev":"{egress(node, ip)}"}}]\';;'
                for ip in (topo.host_ip("h1"), topo.host_ip("h2"))
            )
            + " esac; done"
        )
        return ["sh", "-c", script, "--"]

    return SimpleNamespace(topo=topo, prefix=prefix)


def test_trace_follows_each_hop_with_one_process_per_node_a_round(tmp_path):
    topo = dumbbell(1)
    log = tmp_path / "calls"
    flows = flowpaths.udp_flows(("h1", "h2"), 40000, 2)
    paths = flowpaths.trace(fake_net(topo, log), flows)
    assert [p["path"] for p in paths] == [["h1", "r_left", "r_right", "h2"]] * 2 + [
        ["h2", "r_right", "r_left", "h1"]
    ] * 2
    assert all(p["complete"] for p in paths)
    assert paths[0]["sport"] == 40000 and paths[0]["dport"] == 40002
    # round 1: h1, h2; round 2: r_left, r_right; round 3: r_right, r_left — 4 flows, 6 processes
    assert sorted(log.read_text().split()) == sorted(["h1", "h2"] + ["r_left", "r_right"] * 2)
