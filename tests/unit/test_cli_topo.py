"""`testbed topo show` through Typer's runner: JSON shape, drawings, and bad input exit codes."""

import json

import pytest
from typer.testing import CliRunner

from testbed.cli import app

runner = CliRunner()


def test_show_json_shape_fattree_k4():
    r = runner.invoke(app, ["topo", "show", "--topo", "fattree", "--k", "4", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert {"hosts", "routers", "links", "addresses"} <= set(data)
    assert len(data["hosts"]) == 16 and len(data["routers"]) == 20 and len(data["links"]) == 48
    assert data["links"][0] == ["h1", "r_e0_0", 100.0, 50]
    assert data["addresses"]["h16"] == "10.3.1.3"


@pytest.mark.parametrize(
    ("args", "hosts", "routers"),
    [
        (["--topo", "leafspine", "--leaves", "3", "--spines", "2", "--hosts-per-leaf", "2"], 6, 5),
        (["--topo", "dumbbell", "--n", "3"], 6, 2),
        (["--topo", "star", "--n", "5"], 5, 1),
        (["--k", "2", "--hosts-per-edge", "3"], 6, 5),
    ],
)
def test_show_other_topologies(args, hosts, routers):
    r = runner.invoke(app, ["topo", "show", *args, "--json", "--bw", "10", "--queue", "20"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert (len(data["hosts"]), len(data["routers"])) == (hosts, routers)
    assert {(lk[2], lk[3]) for lk in data["links"]} == {(10.0, 20)}


def test_show_table_and_png(tmp_path):
    png = tmp_path / "t.png"
    r = runner.invoke(app, ["topo", "show", "--k", "4", "--png", str(png)])
    assert r.exit_code == 0, r.output
    assert "16 hosts, 20 routers" in r.output and "10.0.0.2" in r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "3"], "k: must be even"),
        (["--k", "0"], "k: Input should be greater than or equal to 2"),
        (["--topo", "star", "--n", "0"], "n: Input should be greater than or equal to 1"),
        (["--bw", "0"], "bw: Input should be greater than 0"),
    ],
)
def test_bad_input_is_a_usage_error(args, message):
    r = runner.invoke(app, ["topo", "show", *args])
    assert r.exit_code == 2
    assert message in r.output


def test_unknown_topology_choice_is_rejected():
    r = runner.invoke(app, ["topo", "show", "--topo", "torus"])
    assert r.exit_code == 2
    assert "torus" in r.output


def test_topo_file_errors_name_the_entry(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[nodes]]\nname = "r1"\nkind = "router"\ntier = "moon"\n')
    r = runner.invoke(app, ["topo", "show", "--topo-file", str(bad)])
    assert r.exit_code == 2
    assert "nodes[0] ('r1'): tier" in r.output
    good = tmp_path / "good.toml"
    good.write_text(
        '[defaults]\nmbps = 10\nqueue = 5\n[[nodes]]\nname = "r1"\nkind = "router"\n'
        'tier = "edge"\n[[nodes]]\nname = "h1"\nkind = "host"\n[[links]]\na = "h1"\nb = "r1"\n'
    )
    r = runner.invoke(app, ["topo", "show", "--topo-file", str(good), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["links"] == [["h1", "r1", 10.0, 5]]


def test_every_topo_command_has_help():
    for cmd in ("show", "check", "up"):
        r = runner.invoke(app, ["topo", cmd, "--help"])
        assert r.exit_code == 0 and "--topo" in r.output
