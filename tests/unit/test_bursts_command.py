"""`testbed bursts list|show`: no root, no network; JSON shape and determinism."""

import json

from typer.testing import CliRunner

from testbed.cli import app

runner = CliRunner()


def test_list_names_every_builtin():
    r = runner.invoke(app, ["bursts", "list"])
    assert r.exit_code == 0, r.output
    for name in ("none", "light", "moderate", "heavy", "sham"):
        assert name in r.output


def test_show_json_is_seeded_and_complete():
    args = ["bursts", "show", "heavy", "--seed", "3", "--duration", "5", "--json"]
    a = runner.invoke(app, args)
    b = runner.invoke(app, args)
    assert a.exit_code == 0, a.output
    assert a.output == b.output
    body = json.loads(a.output)
    assert body["preset"] == "heavy" and len(body["hash"]) == 16
    first = body["events"][0]
    assert set(first) == {
        "event_id", "link", "direction", "kind", "magnitude", "params",
        "planned_start_s", "planned_end_s",
    }  # fmt: skip
    assert max(e["planned_start_s"] for e in body["events"]) < 5
    assert {e["direction"] for e in body["events"] if e["kind"] == "incast"} == {"r_e2_0->h9"}


def test_show_unknown_preset_exits_2_naming_it():
    r = runner.invoke(app, ["bursts", "show", "nope"])
    assert r.exit_code == 2
    assert "unknown preset 'nope'" in r.output
