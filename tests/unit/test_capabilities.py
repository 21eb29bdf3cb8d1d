"""Backend choice and doctor's verdict from given capabilities (no root needed)."""

import dataclasses

import pytest

from testbed.base.capabilities import Capabilities
from testbed.bursts.impairments import choose_impairment
from testbed.cli.commands.doctor import missing_pieces

ALL = Capabilities(
    netem=True, htb=True, tbf=True, pfifo=True, bfifo=True, clsact=True, ifb=True,
    nft_numgen=True, iptables_statistic=True, root=True, mnexec=True, iperf3=True, torch=True,
    kernel="6.1",
)  # fmt: skip


def caps(**kw):
    return dataclasses.replace(ALL, **kw)


def test_auto_prefers_netem_then_iptables_then_nft():
    assert choose_impairment("auto", ALL)[0] == "netem"
    assert choose_impairment("auto", caps(netem=False))[0] == "iptables"
    assert choose_impairment("auto", caps(netem=False, iptables_statistic=False))[0] == "nft"
    with pytest.raises(ValueError, match="no loss backend"):
        choose_impairment("auto", caps(netem=False, iptables_statistic=False, nft_numgen=False))


@pytest.mark.parametrize(
    ("backend", "field", "module"),
    [("netem", "netem", "sch_netem"), ("iptables", "iptables_statistic", "xt_statistic"),
     ("nft", "nft_numgen", "numgen")],
)  # fmt: skip
def test_explicit_missing_backend_names_module_and_fix(backend, field, module):
    assert choose_impairment(backend, ALL)[0] == backend
    with pytest.raises(ValueError, match=module):
        choose_impairment(backend, caps(**{field: False}))


def test_missing_pieces_name_their_fix():
    assert missing_pieces(ALL) == [] or [m.what for m in missing_pieces(ALL)] == ["ethtool"]
    m = {x.what: x.fix for x in missing_pieces(caps(root=False, iperf3=False))}
    assert "as root" in m["root"] and "apt-get install iperf3" in m["iperf3"]
    m = {x.what: x.fix for x in missing_pieces(caps(htb=False))}
    assert "HTB" in m["sch_htb"]
    assert ALL.to_dict()["kernel"] == "6.1"


def test_backends_come_from_the_impairment_registry():
    from testbed.bursts.impairments import LOSS_BACKENDS, MECHANISMS

    fields = {f.name for f in dataclasses.fields(Capabilities)}
    assert all(MECHANISMS[b].needs in fields and MECHANISMS[b].fix for b in LOSS_BACKENDS)
    with pytest.raises(ValueError, match="'tbf': auto, " + ", ".join(LOSS_BACKENDS)):
        choose_impairment("tbf", ALL)
    assert choose_impairment("auto", caps(netem=False)) == (
        "iptables",
        "no netem; " + MECHANISMS["iptables"].works,
    )
