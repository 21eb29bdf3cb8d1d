"""A real k=4 fat-tree in Mininet: reachability, shaped throughput, ECMP, and clean teardown.

One module-scoped network serves the measurement tests; the teardown tests bring up their
own networks (in this process, or in a child that gets SIGINT/SIGTERM) and compare the
machine's state before and after.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.base.statedir import ROOT, netns_inode, pids_in_netns
from testbed.network import flowpaths, netcheck
from testbed.network.live import live_network
from topologies import fattree

pytestmark = pytest.mark.require_root
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def net():
    with live_network(fattree(4, mbps=100.0, queue=50), seed=7) as n:
        yield n


def test_all_pairs_reachable(net):
    r = netcheck.reachability(net)
    assert r.total == 240
    assert r.reachable == 240, r.unreachable


def test_iperf3_across_pods_within_10_percent(net):
    mbps = netcheck.iperf3(net, "h1", "h16", seconds=3)
    assert 90.0 <= mbps <= 110.0, mbps


def test_shaping_and_routes_are_in_the_kernel(net):
    qdiscs = net.exec("r_a0_0", ["tc", "qdisc", "show", "dev", "r_a0_0-eth2"])
    assert "htb 1:" in qdiscs and "pfifo 10:" in qdiscs and "limit 50p" in qdiscs
    cls = net.exec("r_a0_0", ["tc", "class", "show", "dev", "r_a0_0-eth2"])
    assert "rate 100Mbit" in cls
    route = net.exec("r_e0_0", ["ip", "route", "show", "10.3.1.0/24"])
    assert route.count("nexthop") == 2
    sysctl = net.exec("r_c0_0", ["sysctl", "-n", "net.ipv4.fib_multipath_hash_policy"])
    assert sysctl.strip() == "1"


def test_offloads_are_off_on_every_interface(net):
    """What `ethtool -k` reports: every TCP segmentation feature (tso), gso and gro off."""
    topo = net.topo
    for node in ("h1", "h16", "r_e0_0", "r_a1_1", "r_c0_0"):
        for peer in topo.neighbors(node):
            intf = topo.intf(node, peer)
            (feats,) = json.loads(net.exec(node, ["ethtool", "--json", "-k", intf]))
            tso = [k for k in feats if k.startswith("tx-tcp") and k.endswith("segmentation")]
            assert len(tso) >= 4, feats  # tcp, ecn, mangleid, tcp6 (and newer kernels' more)
            for f in ("tcp-segmentation-offload", "generic-segmentation-offload",
                      "generic-receive-offload", *tso):  # fmt: skip
                assert feats[f]["active"] is False, (node, intf, f, feats[f])


def test_flow_paths_follow_the_kernel_to_the_destination(net):
    flows = flowpaths.udp_flows(("h1", "h3", "h16"), 40000, 2)
    paths = flowpaths.trace(net, flows)
    assert len(paths) == 12 and all(p["complete"] for p in paths), paths
    across = [p["path"] for p in paths if {p["src"], p["dst"]} == {"h1", "h16"}]
    assert len(across) == 4 and all(len(p) == 7 for p in across)  # via a core router
    in_pod = [p["path"] for p in paths if {p["src"], p["dst"]} == {"h1", "h3"}]
    assert len(in_pod) == 4 and all(len(p) == 5 for p in in_pod)  # via an aggregation router


def test_parallel_flows_use_more_than_one_uplink(net):
    ups = netcheck.uplinks(net, "r_e0_0")
    assert len(ups) == 2
    before = netcheck.tx_bytes(net, "r_e0_0")
    netcheck.iperf3(net, "h1", "h16", seconds=2, parallel=8, cport=41000)
    after = netcheck.tx_bytes(net, "r_e0_0")
    delta = {u: after[u] - before[u] for u in ups}
    total = sum(delta.values())
    assert total > 10e6, delta  # ~2 s at ~95 Mbit/s
    assert sum(1 for d in delta.values() if d > 0.05 * total) >= 2, delta


# --- teardown: the machine is as it was ------------------------------------------------


def _snapshot() -> dict[str, object]:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10)
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return {
        "links": sorted(ln.split(":")[1].strip().split("@")[0] for ln in links.stdout.splitlines()),
        "netns": netns.stdout,
        "children": _children(),
        "state": sorted(p.name for p in ROOT.iterdir()) if ROOT.is_dir() else [],
    }


def _children() -> set[int]:
    """Live (non-zombie) processes whose parent is this test process."""
    out = set()
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                stat = Path(f"/proc/{e}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == os.getpid() and stat[0] != "Z":
                out.add(int(e))
    return out


def _same_as(before, after, netns_inodes: set[int] | None = None, pids: set[int] = frozenset()):
    assert after["links"] == before["links"]
    assert after["netns"] == before["netns"]
    assert after["children"] <= before["children"]
    assert after["state"] == before["state"]
    if netns_inodes is None:
        return
    assert netns_inodes, "no namespaces were recorded"
    assert pids_in_netns(netns_inodes) == [], "processes left in our namespaces"
    assert not [p for p in pids if _running(p)]


def _running(pid: int) -> bool:
    """Exists and is not a zombie (a detached daemon's zombie belongs to init to reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_teardown_leaves_nothing(net):
    before = _snapshot()
    with live_network(fattree(4), seed=1) as n2:
        pids = {n2.node(h.name).pid for h in n2.topo.nodes}
        inodes = {netns_inode(p) for p in pids}
        # an unregistered daemon that detaches: teardown must still remove it
        n2.exec("h3", ["iperf3", "-s", "-D", "-p", "5999"])
        daemons = set(pids_in_netns(inodes)) - pids
        assert daemons, "the iperf3 daemon did not start"
    _same_as(before, _snapshot(), inodes, pids | daemons)


CHILD = """
import sys, time
from topologies import fattree
from testbed.network.live import live_network
with live_network(fattree(int(sys.argv[1])), tag=sys.argv[2]) as net:
    print("up", flush=True)
    time.sleep(60)
"""


def _child(k: int, tag: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(k), tag],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _recorded(tag: str) -> tuple[set[int], set[int]]:
    """(node pids, their netns inodes) from the child's state dir."""
    try:
        text = (ROOT / tag / "nodes").read_text()
    except OSError:
        return set(), set()
    complete = text[: text.rfind("\n") + 1]  # a line still being appended is not a record yet
    lines = [ln.split() for ln in complete.splitlines() if ln]
    return {int(f[1]) for f in lines}, {int(f[3]) for f in lines if f[3] != "None"}


def _first_node_recorded(tag: str, child: subprocess.Popen, timeout: float = 60.0) -> None:
    """Return once the child's state dir names a node: bring-up has begun and is under way."""
    nodes = ROOT / tag / "nodes"
    deadline = time.monotonic() + timeout
    while not (nodes.is_file() and nodes.read_text().endswith("\n")):
        assert child.poll() is None, f"the child exited during bring-up: {child.stderr.read()}"
        assert time.monotonic() < deadline, f"no node recorded in {nodes} after {timeout:g} s"
        time.sleep(0.005)


def test_sigint_mid_bring_up_leaves_nothing(net):
    before = _snapshot()
    tag = f"test-sigint-{os.getpid()}"
    child = _child(8, tag)  # 208 nodes: the first one recorded is far from the last
    _first_node_recorded(tag, child)
    started, inodes = _recorded(tag)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert "up" not in out.split(), "bring-up finished before the SIGINT: not mid-way"
    assert child.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    assert started, "the child had created no node yet"
    _same_as(before, _snapshot(), inodes, started)


def test_sigterm_while_up_leaves_nothing(net):
    before = _snapshot()
    tag = f"test-sigterm-{os.getpid()}"
    child = _child(2, tag)
    line = child.stdout.readline()
    assert line.strip() == "up", child.stderr.read()
    started, inodes = _recorded(tag)
    child.send_signal(signal.SIGTERM)
    _out, err = child.communicate(timeout=60)
    assert child.returncode != 0 and "Terminated" in err, err[-2000:]
    _same_as(before, _snapshot(), inodes, started)


CRASH = """
import os, signal, subprocess, sys
from topologies import fattree
from testbed.network.live import live_network
with live_network(fattree(2), tag=sys.argv[1]) as net:
    p = net.node("h1").popen(["sleep", "300"], stdout=subprocess.DEVNULL)
    net.register_process(p, "sleep on h1")
    net.exec("h2", ["iperf3", "-s", "-D", "-p", "5998"])  # unregistered, in a live node's netns
    print(p.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # a hard crash: no teardown runs
"""


def test_clean_removes_a_crashed_runs_leftovers(net):
    from testbed.network import cleanup

    before = _snapshot()
    tag = f"test-crash-{os.getpid()}"
    child = subprocess.run([sys.executable, "-c", CRASH, tag], cwd=REPO, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    sleeper = int(child.stdout.split()[0])
    started, inodes = _recorded(tag)
    assert _running(sleeper), "the registered process should outlive the crashed owner"
    report = cleanup.clean()
    assert str(ROOT / tag) in report.state_dirs
    assert sleeper in report.killed
    assert str(net.state.path) in report.live_runs  # a live network is never touched
    assert net.exec("h1", ["true"]) == ""
    _same_as(before, _snapshot(), inodes, started | {sleeper})


def test_failed_bring_up_and_failing_body_leave_nothing(net):
    import dataclasses

    before = _snapshot()
    t = fattree(2)
    delayed = dataclasses.replace(t, links=(dataclasses.replace(t.links[0], delay_ms=1.0),
                                            *t.links[1:]))  # fmt: skip
    seen: dict[str, set[int]] = {}

    def remember(n):
        seen["pids"] = {n.node(x.name).pid for x in n.topo.nodes}
        seen["ns"] = {netns_inode(p) for p in seen["pids"]}

    with pytest.raises(RuntimeError, match="boom"), live_network(t) as n3:
        remember(n3)
        raise RuntimeError("boom")
    _same_as(before, _snapshot(), seen["ns"], seen["pids"])
    if not _netem():
        with pytest.raises(ValueError, match="sch_netem"), live_network(delayed):
            pass
        _same_as(before, _snapshot())  # its node shells were our children: none is left


def _netem() -> bool:
    from testbed.base.capabilities import probe

    return probe().netem


def _paths(n, ports=range(40000, 40032)) -> list[str]:
    """The uplink r_e0_0 picks for TCP h1 -> h16 from each source port (forwarded lookup)."""
    out = []
    for sport in ports:
        route = n.exec("r_e0_0", ["ip", "-o", "route", "get", "10.3.1.3", "from", "10.0.0.2",
                                  "iif", "r_e0_0-eth0", "ipproto", "tcp", "sport", str(sport),
                                  "dport", "5201"])  # fmt: skip
        out.append(route.split(" dev ")[1].split()[0])
    return out


def test_same_seed_same_paths_other_seed_other_paths(net):
    first = _paths(net)
    assert len(set(first)) == 2  # 32 flows hash onto both uplinks
    with live_network(fattree(4), seed=7) as again:
        assert _paths(again) == first
    with live_network(fattree(4), seed=8) as other:
        assert _paths(other) != first
