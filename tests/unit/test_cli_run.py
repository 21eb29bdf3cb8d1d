"""`testbed run` through Typer's runner: flags generated from the spec, and bad input.

Bad input exits 2 naming the field, with no traceback, before anything is built: validation and
planning come before the root check, so none of this needs root (or builds a network).
"""

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli import app
from testbed.run import experiment, results
from testbed.spec import RunSpec, SpecError, build_spec
from workloads.spec import PANELS

runner = CliRunner()

DISCONNECTED = """
defaults = { mbps = 100, queue = 50 }
nodes = [{ name = "r1", kind = "router", tier = "edge" }, { name = "h1", kind = "host" },
         { name = "r2", kind = "router", tier = "edge" }, { name = "h2", kind = "host" }]
links = [{ a = "h1", b = "r1" }, { a = "h2", b = "r2" }]
"""

PRESET = """
name = "{name}"
[[streams]]
kind = "loss"
magnitude = 0.1
duration_s = 0.01
arrival = {{ min_gap_s = {gap} }}
targets = [{{ role = "worker_downlink", worker = {worker} }}]
"""


@pytest.fixture
def files(tmp_path):
    """Bad input files by name."""
    out = {
        "lr_inf.toml": "[run]\nlr = inf\n",
        "run_id_path.toml": '[run]\nrun_id = "../../.."\n',
        "run_not_table.toml": "run = 5\n",
        "disconnected.toml": DISCONNECTED,
        "worker9.toml": PRESET.format(name="w9", gap=0.5, worker=9),
        "dense.toml": PRESET.format(name="dense", gap=1e-9, worker=0),
        "rescale_yes.toml": '[run]\nrescale = "yes"\n',
        "workers_float.toml": "[run]\nworkers = 4.0\n",
        "run_id_last.toml": '[run]\nrun_id = "last"\n',
    }
    for name, text in out.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "binary.toml").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    (tmp_path / "latin1.toml").write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    (tmp_path / "adir").mkdir()
    (tmp_path / "big.toml").write_text("# " + "x" * (1 << 20) + "\n")
    os.mkfifo(tmp_path / "fifo.toml")
    (tmp_path / "afile").write_text("")
    (tmp_path / "taken" / "r1").mkdir(parents=True)
    return tmp_path


@pytest.fixture
def nothing_runs(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("run_experiment reached: bad input got past planning")

    monkeypatch.setattr(experiment, "run_experiment", refuse)


def _invoke(args: list[str], root) -> object:
    args = [a.replace("{dir}", str(root)) for a in args]
    return runner.invoke(app, [*args, "--out", str(root / "results")])


BAD_RUNS = [
    (["--lr", "inf"], "lr", "finite"),
    (["--lr", "1e308"], "lr", "less than or equal"),
    (["--bucket-cap-mb", "inf"], "bucket_cap_mb", "finite"),
    (["--interval-ms", "inf"], "interval_ms", "finite"),
    (["--bw", "nan"], "bw", "finite"),
    (["--config", "{dir}/lr_inf.toml"], "lr", "finite"),
    (["--config", "{dir}/run_id_path.toml"], "run_id", "pattern"),
    (["--run-id", "a/b"], "run_id", "pattern"),
    (["--label", "../x"], "label", "pattern"),
    (["--topo", "star", "--burst", "heavy"], "burst", "no aggregation links"),
    (["--topo", "dumbbell", "--burst", "moderate"], "burst", "no aggregation links"),
    (["--burst", "{dir}/worker9.toml"], "burst", "worker"),
    (["--burst", "{dir}/dense.toml"], "burst", "MAX_EVENTS"),
    (["--topo-file", "{dir}/disconnected.toml"], "topo_file", "disconnected"),
    (["--topo-file", "{dir}/latin1.toml"], "topo_file", "UTF-8"),
    (["--k", "64"], "k", "the limit is 1,000"),
    (["--k", "254"], "k", "the limit is 1,000"),
    (["--topo", "leafspine", "--leaves", "256", "--hosts-per-leaf", "253"], "leaves", "limit"),
    (["--config", "{dir}/run_not_table.toml"], "config", "must be a table"),
    (["--config", "{dir}/binary.toml"], "config", "UTF-8"),
    (["--config", "{dir}/adir"], "config", "directory"),
    (["--config", "{dir}/missing.toml"], "config", "does not exist"),
    (["--seed", "-1"], "seed", "greater than or equal"),
    (["--workers", "17"], "workers", "16 hosts"),
    (["--workload", "ping", "--probe-src", "h99"], "probe_src", "not a host"),
    (["--p-low", "1"], "p_low", "less than 1"),
    (["--p-gap", "-0.1"], "p_gap", "greater than or equal to 0"),
    (["--p-low", "0.5", "--p-gap", "0.5"], "p_gap", "must be < 1"),
    (["--phase", "paper", "--workload", "allreduce"], "phase", "no epochs"),
    (["--run-id", "last"], "run_id", "reserved"),
    (["--config", "{dir}/run_id_last.toml"], "run_id", "reserved"),
    (["--run-id", ".last.1"], "run_id", "pattern"),
    (["--config", "/dev/zero"], "config", "not a regular file"),
    (["--config", "{dir}/fifo.toml"], "config", "not a regular file"),
    (["--config", "{dir}/big.toml"], "config", "larger than 1,048,576 bytes"),
    (["--config", "{dir}/rescale_yes.toml"], "rescale", "valid boolean"),
    (["--config", "{dir}/workers_float.toml"], "workers", "valid integer"),
    (["--base-port", "65000", "--workers", "135"], "base_port", "65539, above 65535"),
]


@pytest.mark.parametrize(("args", "field", "why"), BAD_RUNS)
def test_bad_input_exits_2_naming_the_field_before_anything_is_built(
    args, field, why, files, nothing_runs
):
    res = _invoke(["run", *args], files)
    assert res.exit_code == 2, res.output
    assert f"invalid spec: {field}:" in res.output and why in res.output, res.output
    assert "Traceback" not in res.output
    assert isinstance(res.exception, SystemExit | None), res.exception
    assert not (files / "results").exists()


def test_flags_still_parse_their_text_and_override_a_strict_config(files):
    """Strict types are for the file's values as written; a flag is text and parses as ever, and
    a flag overriding a bad file value leaves nothing to complain about."""
    spec = build_spec(files / "workers_float.toml", workers=8, dilation="4")
    assert spec.workers == 8 and spec.dilation == 4.0
    ok = files / "ok.toml"
    ok.write_text('[run]\nbw = 50\nrescale = true\nout = "x"\ndilation = "auto"\n')
    spec = build_spec(ok)
    assert (spec.bw, spec.rescale, spec.out, spec.dilation) == (50.0, True, Path("x"), "auto")


def test_the_port_range_fits_at_the_edge_and_tcp_binds_none():
    assert RunSpec(base_port=65000, workers=134).workers == 134  # last port 65535
    assert RunSpec(base_port=65000, workers=200, transport="tcp").workers == 200


BAD_OUTS = [
    (["--out", "{dir}/afile"], "out", "is not a folder"),
    (["--out", "{dir}/afile/sub"], "out", "is not a folder"),
    (["--out", "{dir}/taken", "--run-id", "r1"], "run_id", "exists"),
]


@pytest.mark.parametrize(("args", "field", "why"), BAD_OUTS)
def test_an_unusable_out_or_taken_run_id_exits_2_with_one_line(
    args, field, why, files, nothing_runs
):
    before = sorted(files.rglob("*"))
    res = runner.invoke(app, ["run", *[a.replace("{dir}", str(files)) for a in args]])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"error: invalid spec: {field}:") and why in line, line
    assert sorted(files.rglob("*")) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_out_under_a_folder_not_ours_exits_2(nothing_runs):
    res = runner.invoke(app, ["run", "--out", "/proc/x"])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.splitlines()
    assert line.startswith("error: invalid spec: out: cannot create /proc/x")


def test_a_run_folder_refused_at_creation_exits_2_with_one_line(tmp_path, monkeypatch):
    """What only creating it tells (root under /proc): the run command says it in one line."""
    afile = tmp_path / "afile"
    afile.write_text("")

    def make_dir(p, **_kw):
        return experiment.RunOutcome("ok", results.create_run_dir(afile, "r"))

    monkeypatch.setattr(experiment, "run_experiment", make_dir)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(results, "check_out", lambda *_a: None)  # as if it could not foresee
    res = runner.invoke(app, ["run", "--out", str(tmp_path / "results")])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.splitlines()
    assert line == f"error: invalid spec: out: {afile} exists and is not a folder"
    assert sorted(tmp_path.iterdir()) == [afile]


def test_create_run_dir_names_the_field_it_cannot_make(tmp_path):
    results.create_run_dir(tmp_path, "a")
    with pytest.raises(SpecError, match="^run_id: .* exists"):
        results.create_run_dir(tmp_path, "a")
    (tmp_path / "f").write_text("")
    with pytest.raises(SpecError, match="^out: .* is not a folder"):
        results.create_run_dir(tmp_path / "f", "a")
    with pytest.raises(SpecError, match="^out: cannot create /proc/x/a"):
        results.create_run_dir(Path("/proc/x"), "a")  # what root learns only by trying


BAD_SHOWS = [
    (["bursts", "show", "heavy", "--duration", "-5"], "--duration"),
    (["bursts", "show", "heavy", "--duration", "0"], "--duration"),
    (["bursts", "show", "heavy", "--duration", "nan"], "--duration"),
    (["bursts", "show", "heavy", "--duration", "1e9"], "--duration"),
    (["bursts", "show", "heavy", "--seed", "-1"], "--seed"),
    (["bursts", "show", "{dir}/dense.toml"], "MAX_EVENTS"),
    (["bursts", "show", "{dir}/binary.toml"], "UTF-8"),
    (["topo", "show", "--png", "/nonexistent/dir/x.png"], "--png"),
    (["topo", "show", "--topo-file", "{dir}/latin1.toml"], "topo_file"),
    (["topo", "show", "--topo-file", "{dir}/disconnected.toml"], "disconnected"),
    (["topo", "show", "--k", "64"], "k"),
]


@pytest.mark.parametrize(("args", "named"), BAD_SHOWS)
def test_bad_input_to_the_pure_commands_exits_2_naming_it(args, named, files):
    args = [a.replace("{dir}", str(files)) for a in args]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert named in res.output, res.output
    assert isinstance(res.exception, SystemExit | None), res.exception


def test_not_root_is_refused_after_validation_and_before_anything_is_built(
    tmp_path, monkeypatch, nothing_runs
):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    res = runner.invoke(app, ["run", "--out", str(tmp_path / "results")])
    assert res.exit_code == 2
    assert "run it as root" in res.output and "sudo" not in res.output
    assert not (tmp_path / "results").exists()


def test_the_command_plans_once_and_hands_the_plan_in(tmp_path, monkeypatch):
    planned, ran = [], []
    real_plan = experiment.plan

    def counting_plan(spec):
        planned.append(real_plan(spec))
        return planned[-1]

    def fake_run(p, **_kw):
        ran.append(p)
        return experiment.RunOutcome("ok", tmp_path, {"wall_s": 1.0})

    monkeypatch.setattr(experiment, "plan", counting_plan)
    monkeypatch.setattr(experiment, "run_experiment", fake_run)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    res = runner.invoke(app, ["run", "--burst", "light", "--transport", "tcp"])
    assert res.exit_code == 0, res.output
    assert len(planned) == 1 and ran == planned
    assert ran[0].spec.transport == "tcp" and ran[0].events  # the schedule is part of the plan


def test_help_lists_every_spec_field_as_a_flag_grouped_by_panel():
    res = runner.invoke(app, ["run", "--help"], terminal_width=240, env={"COLUMNS": "240"})
    assert res.exit_code == 0
    listed = set(re.findall(r"--[a-z][a-z0-9-]*", res.output))
    missing = {f for f in RunSpec.model_fields if "--" + f.replace("_", "-") not in listed}
    assert not missing
    assert {"--config", "--json"} <= listed
    for panel in PANELS:
        assert f"─ {panel} ─" in res.output


def test_topo_show_describes_the_network_run_builds():
    res = runner.invoke(app, ["topo", "show", "--topo", "leafspine", "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)["hosts"]) == len(RunSpec(topo="leafspine").topology().hosts)
