"""Offloads off by `ethtool -K`, one shell per namespace; a failing interface is named."""

import pytest

from testbed.base.kernel import KernelError, run_each
from testbed.base.nsenter import offload_commands


def test_offload_commands_one_ethtool_per_interface():
    assert offload_commands(["r-eth0", "r-eth1"], ("tso", "gso", "gro")) == [
        ["ethtool", "-K", "r-eth0", "tso", "off", "gso", "off", "gro", "off"],
        ["ethtool", "-K", "r-eth1", "tso", "off", "gso", "off", "gro", "off"],
    ]
    assert offload_commands([], ("tso",)) == []


def test_run_each_runs_in_order_in_one_shell_and_names_the_failing_command(tmp_path):
    out = tmp_path / "out"
    run_each([["sh", "-c", f"echo a >> {out}"], ["sh", "-c", f"echo b >> {out}"]])
    assert out.read_text() == "a\nb\n"
    prefix = ["env", "DBLP_TEST=1"]  # stands in for `mnexec -a PID`
    never = tmp_path / "never"
    with pytest.raises(KernelError) as ei:
        run_each(
            [["true"], ["sh", "-c", "echo 'no such device' >&2; exit 92"], ["touch", str(never)]],
            prefix=prefix,
        )
    assert ei.value.cmd == "env DBLP_TEST=1 sh -c echo 'no such device' >&2; exit 92"
    assert "no such device" in ei.value.stderr
    assert not never.exists()  # the first failure stops the rest
    run_each([])  # nothing to run: no process
