"""Leaf drop counters from `tc -j -s qdisc show`, on output captured from iproute2 6.1.

The samples are real: an HTB root, class 1:1 at 1 Mbit/s and a `pfifo limit 5` leaf 10: on a0
(traffic forwarded into it overflowed the leaf), a 100 Mbit/s HTB + `pfifo limit 50` on a1.
"""

import pytest

from testbed.bursts.impairments.applier import Ack
from testbed.bursts.impairments.base import Egress
from testbed.bursts.impairments.tc_stats import (
    QDISC_STATS,
    leaf_drops,
    leaf_drops_by_dev,
    read_leaf_drops,
)

#: `tc -j -s qdisc show` (every device of the namespace: each qdisc names its "dev")
ALL_DEVS = (  # one qdisc a line here; tc prints them on one line
    '[{"kind":"noqueue","handle":"0:","dev":"lo","root":true,"refcnt":2,"options":{},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},'
    '{"kind":"htb","handle":"1:","dev":"a1","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x1","direct_packets_stat":0,"direct_qlen":1000},"bytes":776,"packets":10,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},'
    '{"kind":"pfifo","handle":"10:","dev":"a1","parent":"1:1","options":{"limit":50},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},'
    '{"kind":"htb","handle":"1:","dev":"a0","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x1","direct_packets_stat":0,"direct_qlen":1000},"bytes":1267104,"packets":894,"drops":391,"overlimits":743,"requeues":0,"backlog":0,"qlen":0},'
    '{"kind":"pfifo","handle":"10:","dev":"a0","parent":"1:1","options":{"limit":5},"bytes":1267104,"packets":894,"drops":391,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},'
    '{"kind":"noqueue","handle":"0:","dev":"b0","root":true,"refcnt":2,"options":{},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]'
)
#: `tc -j -s qdisc show dev a0` (one device: no "dev" key)
ONE_DEV = (  # one qdisc a line here; tc prints them on one line
    '[{"kind":"htb","handle":"1:","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x1","direct_packets_stat":0,"direct_qlen":1000},"bytes":1267104,"packets":894,"drops":391,"overlimits":743,"requeues":0,"backlog":0,"qlen":0},'
    '{"kind":"pfifo","handle":"10:","parent":"1:1","options":{"limit":5},"bytes":1267104,"packets":894,"drops":391,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]'
)


def test_leaf_drops_of_one_device():
    assert leaf_drops(ONE_DEV) == 391
    assert leaf_drops(ONE_DEV, handle="1:") == 391  # the HTB root counts its leaf's drops too
    with pytest.raises(ValueError, match="no qdisc 20:"):
        leaf_drops(ONE_DEV, handle="20:")


def test_leaf_drops_by_device_skip_roots_and_noqueue():
    assert leaf_drops_by_dev(ALL_DEVS) == {"a0": 391, "a1": 0}
    assert leaf_drops_by_dev(ALL_DEVS, handle="0:") == {"lo": 0, "b0": 0}


def test_text_output_is_refused_not_misread():
    text = "qdisc pfifo 10: dev a0 parent 1:1 limit 5p\n Sent 1267104 bytes 894 pkt (dropped 391"
    with pytest.raises(ValueError, match="no JSON"):
        leaf_drops(text)
    with pytest.raises(ValueError, match="no list"):
        leaf_drops_by_dev('{"kind": "pfifo"}')


class Shell:
    def __init__(self, out):
        self.out, self.sent = out, []

    def submit(self, argv):
        self.sent.append(list(argv))
        return len(self.sent)

    def wait(self, seq, timeout=5.0):
        return Ack(seq, "", 0, self.out, 1.0)


def test_read_leaf_drops_asks_each_namespace_once():
    shell = Shell(ALL_DEVS)
    egs = [Egress("r", peer, intf, 100.0, 50, False) for peer, intf in (("x", "a0"), ("y", "a1"))]
    drops = read_leaf_drops(lambda node: shell, egs)
    assert shell.sent == [list(QDISC_STATS)] == [["tc", "-j", "-s", "qdisc", "show"]]
    assert {d.dst: n for d, n in drops.items()} == {"x": 391, "y": 0}
