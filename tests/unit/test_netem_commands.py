"""The exact tc commands the netem mechanism issues, so netem is covered on kernels without it."""

from dataclasses import dataclass

import pytest

from testbed.bursts.impairments.applier import Ack
from testbed.bursts.impairments.base import Egress
from testbed.bursts.impairments.netem import NetemLeaf, check_netem, netem_commands
from testbed.bursts.schedule import Event

EG = Egress("r_a0_0", "r_c0_0", "r_a0_0-eth2", 100.0, 50, False)
LEAF = ["tc", "qdisc", "replace", "dev", "r_a0_0-eth2", "parent", "1:1", "handle", "10:"]
# `tc -j -s qdisc show dev X` shaped as iproute2 6.1 prints it (captured for an HTB root with a
# pfifo leaf 10:, see test_tc_json; kind and counters edited: that machine has no sch_netem)
TC_STATS = (
    '[{"kind":"htb","handle":"1:","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x1",'
    '"direct_packets_stat":0,"direct_qlen":1000},"bytes":1000,"packets":10,"drops":7,'
    '"overlimits":0,"requeues":0,"backlog":0,"qlen":0},{"kind":"netem","handle":"10:",'
    '"parent":"1:1","options":{"limit":50},"bytes":1000,"packets":10,"drops":7,"overlimits":0,'
    '"requeues":0,"backlog":0,"qlen":0}]'
)


@dataclass
class Caps:
    netem: bool
    kernel: str = "6.1.0-test"


class RecordingShell:
    """Stands in for a namespace's shell: records argv, acknowledges at once."""

    def __init__(self):
        self.sent: list[list[str]] = []

    def submit(self, argv):
        self.sent.append(list(argv))
        return len(self.sent)

    def wait(self, seq, timeout=5.0):
        return Ack(seq, "", 0, "", 1.0)

    def run(self, argv, timeout=5.0):
        self.sent.append(list(argv))
        return TC_STATS


def ev(kind, mag, **params):
    return Event(0, "r_a0_0-r_c0_0", EG.direction, kind, mag, params, 0.0, 1.0)


def test_netem_leaf_argv():
    assert netem_commands(EG, 0.5, 0.0) == [[*LEAF, "netem", "limit", "50", "loss", "50%"]]
    assert netem_commands(EG, 0.0, 2.5) == [[*LEAF, "netem", "limit", "50", "delay", "2.5ms"]]
    assert netem_commands(EG, 0.125, 10.0) == [
        [*LEAF, "netem", "limit", "50", "loss", "12.5%", "delay", "10ms"]
    ]
    assert netem_commands(EG, 0.0, 0.0) == [[*LEAF, "pfifo", "limit", "50"]]


def test_loss_and_delay_share_one_leaf_and_revert_separately():
    shell = RecordingShell()
    leaf = NetemLeaf(lambda node: shell, caps=Caps(netem=True))
    leaf.prepare([EG], [ev("loss", 0.2, mode="random"), ev("delay", 5.0)])
    leaf.apply(EG, 0.2, ev("loss", 0.2, mode="random")).wait()
    leaf.apply(EG, 5.0, ev("delay", 5.0)).wait()
    leaf.revert(EG, "loss").wait()
    leaf.revert(EG, "delay").wait()
    assert shell.sent == [
        [*LEAF, "netem", "limit", "50", "loss", "20%"],
        [*LEAF, "netem", "limit", "50", "loss", "20%", "delay", "5ms"],
        [*LEAF, "netem", "limit", "50", "delay", "5ms"],
        ["tc", "-j", "-s", "qdisc", "show", "dev", "r_a0_0-eth2"],  # netem's drops, before pfifo
        [*LEAF, "pfifo", "limit", "50"],
    ]
    assert leaf.drops(EG) == 7 + 7


def test_close_restores_pfifo_only_where_netem_is_left():
    shell = RecordingShell()
    leaf = NetemLeaf(lambda node: shell, caps=Caps(netem=True))
    leaf.prepare([EG], [ev("loss", 0.3, mode="random")])
    leaf.close()
    assert shell.sent == []
    leaf.apply(EG, 0.3, ev("loss", 0.3, mode="random"))
    leaf.close()
    assert shell.sent[-1] == [*LEAF, "pfifo", "limit", "50"]


def test_without_netem_delay_is_an_error_naming_sch_netem():
    with pytest.raises(ValueError, match="delay events need sch_netem.*6.1.0-test"):
        check_netem(Caps(netem=False), [ev("delay", 5.0)])
    with pytest.raises(ValueError, match="sch_netem"):
        NetemLeaf(lambda n: RecordingShell(), caps=Caps(False)).prepare([EG], [ev("delay", 1.0)])


def test_netem_refuses_nth_loss():
    with pytest.raises(ValueError, match="every-n-th.*iptables or nft"):
        check_netem(Caps(netem=True), [ev("loss", 0.2, mode="nth")])
