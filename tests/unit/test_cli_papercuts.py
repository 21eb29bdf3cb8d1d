"""CLI papercuts: help text keeps its brackets, bad sweep lists exit 2 naming the value, `bursts
show` on any topology, `--version`, and the progress bar over runs (lines stay plain and whole
at any COLUMNS)."""

from __future__ import annotations

import io
import json
import re
from importlib import metadata
from pathlib import Path

import pytest
from rich.console import Console
from test_presets import GOOD
from typer.main import get_command
from typer.testing import CliRunner

from testbed.base import terminal
from testbed.cli import app
from testbed.cli.commands.sweep import TRANSPORTS
from testbed.run import experiment
from testbed.spec import RunSpec, hash_of
from testbed.sweeps import sweep_plan
from testbed.sweeps.sweep_runner import resolve_plan, run_plan

runner = CliRunner()
WIDTHS = [None, "40", "200"]  # COLUMNS unset, narrow, wide


def _columns(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> dict[str, str | None]:
    """COLUMNS for this test, both in os.environ (rich reads it) and the runner's env."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    return {"COLUMNS": columns}


def _commands(group, path=()):
    for name, cmd in getattr(group, "commands", {}).items():
        yield (*path, name), cmd
        yield from _commands(cmd, (*path, name))


COMMANDS = list(_commands(get_command(app)))


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_keeps_bracketed_words(path, cmd):
    """Rich markup must not eat `[run]`-like words of an option's help."""
    words = {
        w for p in cmd.params for w in re.findall(r"\[[^\]\s]+\]", getattr(p, "help", "") or "")
    }
    res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert res.exit_code == 0, res.output
    for w in words:
        assert w.replace("\\[", "[") in res.output, f"{' '.join(path)} --help lost {w}"


def test_sweep_help_shows_the_run_table():
    res = runner.invoke(app, ["sweep", "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert "`[run]` table" in res.output


@pytest.mark.parametrize("columns", WIDTHS)
def test_sweep_unknown_transport_exits_2_naming_it(monkeypatch, tmp_path, columns):
    called = []
    monkeypatch.setattr(experiment, "run_experiment", lambda *a, **k: called.append(a))
    env = _columns(monkeypatch, columns)
    args = ["sweep", "--transports", "tcp,foo", "--out", str(tmp_path)]
    res = runner.invoke(app, args, env=env)
    assert res.exit_code == 2
    (line,) = res.stderr.splitlines()
    assert line.startswith("error: --transports: 'foo' is not a transport; choose from ")
    assert all(t in line for t in TRANSPORTS) and "pydantic" not in res.output
    assert called == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--transports", "foo,bar"], "'foo', 'bar' are not transports"),
        (["--transports", " , "], "--transports: give at least one value"),
        (["--bursts", "none,nosuch"], "--bursts: unknown preset 'nosuch'; built-ins: "),
    ],
)
def test_sweep_bad_lists(tmp_path, args, needle):
    res = runner.invoke(app, ["sweep", *args, "--out", str(tmp_path), "--dry-run"])
    assert res.exit_code == 2 and needle in res.stderr, res.output


def test_sweep_transport_choices_come_from_the_spec():
    assert set(TRANSPORTS) == set(RunSpec.model_json_schema()["properties"]["transport"]["enum"])


# -- bursts show on any topology ---------------------------------------------------------


def test_bursts_show_lays_the_preset_on_the_given_topology(tmp_path):
    preset = tmp_path / "wl.toml"
    preset.write_text(GOOD)  # loss on worker 0's downlink
    args = ["bursts", "show", str(preset), "--duration", "2", "--json"]
    dumbbell = runner.invoke(app, [*args, "--topo", "dumbbell", "--n", "3", "--workers", "2"])
    assert dumbbell.exit_code == 0, dumbbell.output
    assert {e["direction"] for e in json.loads(dumbbell.output)["events"]} == {"r_left->h1"}
    fattree = runner.invoke(app, args)  # the default network: fat-tree k=4, workers h1 h5 h9 h13
    assert {e["direction"] for e in json.loads(fattree.output)["events"]} == {"r_e0_0->h1"}
    table = runner.invoke(
        app, ["bursts", "show", str(preset), "--topo", "star", "--n", "3", "--workers", "2"]
    )
    assert table.exit_code == 0 and "on star-3" in table.output, table.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["heavy", "--topo", "star"], "heavy on star-4: targets: no aggregation links"),
        (["none", "--topo", "star", "--workers", "9"], "9 workers but the topology has 4"),
        (["none", "--k", "3"], "error: k: must be even"),
    ],
)
def test_bursts_show_bad_network_exits_2(args, needle):
    res = runner.invoke(app, ["bursts", "show", *args])
    assert res.exit_code == 2 and needle in res.stderr, res.output


def test_version_from_package_metadata():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.output.strip() == f"testbed {metadata.version('dblp-testbed')}"


# -- progress over runs ------------------------------------------------------------------


def _fake_run(planned, out_root, run_id=None, on_event=None):
    """A run of 4 steps, each reported as the worker's rank 0 would, that writes nothing."""
    for step in range(4):
        on_event({"event": "step", "step": step, "steps_total": 4})
    summary = {"p50_ms": 20.123456, "p99_in_burst_ms": None}
    return experiment.RunOutcome("ok", Path(out_root) / run_id, summary)


@pytest.mark.parametrize("columns", WIDTHS)
def test_sweep_lines_are_plain_and_whole_at_any_width(monkeypatch, tmp_path, capsys, columns):
    _columns(monkeypatch, columns)
    monkeypatch.setattr(experiment, "run_experiment", _fake_run)
    base = RunSpec(workload="allreduce", rounds=4).measured()
    plan = sweep_plan.expand(base, ("tcp", "dblp"), ("none",), 1, hash_of)
    result = run_plan(plan, tmp_path / "sw", resolve_plan(plan))
    assert result.ran == 2 and not result.failed
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"\[1/2\] tcp / none / r0: running, sweep ETA \d+ s", lines[0]), lines
    assert re.fullmatch(r"\[1/2\] tcp / none / r0: ok in 0 s  p50 20\.1 ms, p99 in bursts – ms",
                        lines[1]), lines  # fmt: skip
    assert lines[2].startswith("[2/2] dblp / none / r0: running, sweep ETA 0 s")
    assert len(lines) == 4  # no bar drawn into a pipe


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_runs_progress_eta(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(terminal.time, "monotonic", clock)
    p = terminal.RunsProgress(Console(file=io.StringIO()), total=3)
    assert p.eta_s() is None  # nothing to go by yet
    p.start("[1/3] a", expected_s=100.0)
    assert p.eta_s() == 300.0  # the expected duration, for this run and the two after it
    clock.t += 30
    p.on_event({"event": "step", "step": 0, "steps_total": 4})  # 1/4 done in 30 s
    assert p.eta_s() == pytest.approx(90 + 2 * 100)
    clock.t += 90
    assert p.finish() == 120
    p.start("[2/3] b", expected_s=100.0)
    assert p.eta_s() == 240.0  # the measured mean now: 120 s per run, two runs left


@pytest.mark.parametrize("width", [40, 200])
def test_runs_progress_bar_on_a_terminal(width):
    out = io.StringIO()
    term = Console(file=out, force_terminal=True, width=width, color_system=None)
    with terminal.RunsProgress(term, total=3) as p:
        p.start("[1/3] tcp / heavy / r0", expected_s=65.0)
        p.on_event({"event": "step", "step": 1, "steps_total": 4})
        p.say("[1/3] tcp / heavy / r0: a plain line")
        p.bar.refresh()
    text = out.getvalue()
    assert "[1/3] tcp / heavy / r0: a plain line" in text
    # half of the first run done at once: ETA = 0 + 2 runs x 65 s
    assert "0/3 runs 0:00:00 ETA 0:02:10" in text


def test_wall_time_reads_as_people_say_it():
    from testbed.base.terminal import wall_time

    assert [wall_time(s) for s in (0.4, 42, 425, 3790)] == ["0 s", "42 s", "7 min 5 s", "1 h 3 min"]
