"""The impairment registry: which mechanism plays which kind, for each loss backend."""

from types import SimpleNamespace

import pytest

from testbed.bursts.impairments import LOSS_BACKENDS, MECHANISMS, Impairment, mechanism_for
from testbed.bursts.impairments.incast import IncastSenders
from testbed.bursts.impairments.iptables import IptablesLoss
from testbed.bursts.impairments.netem import NetemLeaf
from testbed.bursts.impairments.nft import NftLoss
from testbed.bursts.impairments.squeeze import HtbSqueeze
from testbed.bursts.scheduler import BurstScheduler


def test_loss_backends_are_the_registered_loss_mechanisms():
    assert LOSS_BACKENDS == ("netem", "iptables", "nft")
    assert all(issubclass(cls, Impairment) and cls.kinds for cls in MECHANISMS.values())


@pytest.mark.parametrize(
    ("backend", "loss"), [("netem", NetemLeaf), ("iptables", IptablesLoss), ("nft", NftLoss)]
)
def test_loss_follows_the_backend_and_every_other_kind_has_one_mechanism(backend, loss):
    assert mechanism_for("loss", backend) is loss
    assert mechanism_for("delay", backend) is NetemLeaf
    assert mechanism_for("squeeze", backend) is HtbSqueeze
    assert mechanism_for("incast", backend) is IncastSenders


def test_unknown_backend_or_kind_is_named():
    with pytest.raises(ValueError, match="'tbf'.*netem, iptables, nft"):
        mechanism_for("loss", "tbf")
    with pytest.raises(ValueError, match="'jitter'"):
        mechanism_for("jitter", "netem")


def test_the_scheduler_makes_one_instance_per_mechanism():
    site = SimpleNamespace(topo=SimpleNamespace(host_ip=lambda h: "10.0.0.2"))
    sched = BurstScheduler(site, [], "netem", "unit")
    sched._mechs["loss"] = sched._mechanism("loss")
    assert sched._mechanism("delay") is sched._mechs["loss"]  # one netem leaf carries both
    senders = sched._mechanism("incast")
    assert isinstance(senders, IncastSenders) and senders._ip("h1") == "10.0.0.2"
