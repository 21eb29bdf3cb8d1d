"""The exact tc commands of the shaping layout other modules edit in place."""

import pytest

from testbed.base.kernel import KernelError, batch_text, run_batch
from testbed.network.shaping import (
    as_played,
    leaf_command,
    queue_limit,
    rate_change_command,
    shape_commands,
)


def _argv(line: str) -> list[str]:
    return line.split()


def test_shape_commands_layout():
    cmds = shape_commands("r_e0_0-eth2", 100.0, 50)
    assert cmds[0] == _argv("tc qdisc replace dev r_e0_0-eth2 root handle 1: htb default 1")
    assert cmds[1][:9] == _argv("tc class replace dev r_e0_0-eth2 parent 1: classid 1:1")
    assert cmds[1][9:14] == ["htb", "rate", "100000kbit", "ceil", "100000kbit"]
    assert cmds[2] == (
        _argv("tc qdisc replace dev r_e0_0-eth2 parent 1:1 handle 10: pfifo limit 50")
    )


def test_rate_change_is_in_place_class_change():
    cmd = rate_change_command("x-eth0", 12.5)
    assert cmd[:9] == _argv("tc class change dev x-eth0 parent 1: classid 1:1")
    assert "12500kbit" in cmd and cmd.count("12500kbit") == 2


def test_leaf_pfifo_or_netem():
    assert leaf_command("x", 20)[-3:] == ["pfifo", "limit", "20"]
    netem = leaf_command("x", 20, loss=0.05, delay_ms=2)
    assert netem[netem.index("netem") :] == ["netem", "limit", "20", "loss", "5%", "delay", "2ms"]
    assert "delay" not in leaf_command("x", 20, loss=0.5)
    assert "loss" not in leaf_command("x", 20, delay_ms=1.5)


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"queue": 0}, "queue"), ({"queue": 5, "loss": 1.5}, "loss"), ({"queue": 5, "delay_ms": -1},
     "delay")],
)  # fmt: skip
def test_leaf_rejects_bad_values(kw, match):
    with pytest.raises(ValueError, match=match):
        leaf_command("x", **kw)


def test_rate_must_be_positive():
    with pytest.raises(ValueError):
        shape_commands("x", 0, 10)


def test_batch_text_and_failing_line_is_named():
    assert batch_text([["tc", "a", "b"], ["tc", "c"]], "tc") == "a b\nc\n"
    # `true` ignores stdin and succeeds; `sh -c` fakes ip/tc's batch error for line 2
    fake = ["sh", "-c", "cat >/dev/null; echo 'RTNETLINK answers: nope' >&2;"
            " echo 'Command failed -:2' >&2; exit 1", "--"]  # fmt: skip
    with pytest.raises(KernelError) as ei:
        run_batch([["tc", "one"], ["tc", "two", "x"]], "tc", prefix=fake)
    assert ei.value.cmd.endswith("tc two x")
    assert "nope" in ei.value.stderr


@pytest.mark.parametrize(
    ("queue", "mtu", "limit"),
    [(50, 1500, 50), (50, 9000, 8), (20, 9000, 3), (10, 9000, 2), (2, 9000, 2), (1, 9000, 1),
     (50, 4000, 19), (100_000, 1280, 117_002)],
)  # fmt: skip
def test_queue_limit_keeps_the_bytes_of_1500_mtu_frames(queue, mtu, limit):
    assert queue_limit(queue, mtu) == limit


def test_as_played_divides_rates_and_converts_queues():
    from topologies import fattree

    t = fattree(4, mbps=100.0, queue=50)
    assert as_played(t) is t
    p = as_played(t, mtu=9000, dilation=4)
    assert {(lk.mbps, lk.queue) for lk in p.links} == {(25.0, 8)}
    assert [lk.name for lk in p.links] == [lk.name for lk in t.links]
    with pytest.raises(ValueError, match="dilation"):
        as_played(t, dilation=0.5)
