"""`testbed doctor --json` against what the kernel really does in a namespace of our own."""

import json
import os
import subprocess

import pytest
from typer.testing import CliRunner

from testbed.cli import app

pytestmark = pytest.mark.require_root


def _netem_really_works() -> bool:
    ns = f"dblp-testdoctor-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=10)
    try:
        veth = ["ip", "-n", ns, "link", "add", "dba", "type", "veth", "peer", "name", "dbb"]
        subprocess.run(veth, check=True, timeout=10)
        netem = ["tc", "-n", ns, "qdisc", "add", "dev", "dba", "root", "netem", "loss", "1%"]
        r = subprocess.run(netem, capture_output=True, timeout=10)
        return r.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=10)


def _netns() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_doctor_json_matches_the_kernel():
    before = _netns()
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    caps = report["capabilities"]
    assert caps["htb"] and caps["pfifo"] and caps["iptables_statistic"]
    assert caps["root"] and caps["mnexec"] and caps["iperf3"]
    assert caps["netem"] == _netem_really_works()
    expected = "netem" if caps["netem"] else "iptables"
    assert report["impairment"]["backend"] == expected
    assert report["ok"] is True and report["missing"] == []
    assert _netns() == before  # the probe namespace is gone
