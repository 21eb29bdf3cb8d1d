import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from synthetic_runs import write_run
from typer.testing import CliRunner

from testbed.cli import app
from testbed.run import experiment
from testbed.spec import RunSpec
from testbed.sweeps import sweep_plan
from testbed.sweeps.sweep_plan import Decision


def _fake_hash(spec):
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def test_matrix_order_and_same_seeds_across_transports():
    plan = sweep_plan.expand({"seed": 10}, ("tcp", "dblp"), ("none", "heavy"), 2, _fake_hash)
    assert len(plan) == 8
    assert [(p.repeat, p.burst, p.transport) for p in plan[:4]] == [
        (0, "none", "tcp"),
        (0, "none", "dblp"),
        (0, "heavy", "tcp"),
        (0, "heavy", "dblp"),
    ]
    for p in plan:
        assert p.seed == 10 + p.repeat
        assert p.spec["seed"] == p.seed and p.spec["transport"] == p.transport
        assert p.run_id == f"{p.transport}-{p.burst}-r{p.repeat}-{p.spec_hash}"
    assert len({p.run_id for p in plan}) == 8


def test_real_spec_hash_differs_per_cell_and_is_stable():
    def real(spec):
        return RunSpec.model_validate(spec).spec_hash()

    a = sweep_plan.expand({}, ("tcp", "dblp"), ("heavy",), 2, real)
    b = sweep_plan.expand({}, ("tcp", "dblp"), ("heavy",), 2, real)
    assert [p.run_id for p in a] == [p.run_id for p in b]
    assert len({p.spec_hash for p in a}) == 4
    assert sweep_plan.plan_digest(a) == sweep_plan.plan_digest(b)


def test_parse_list_and_bad_input():
    assert sweep_plan.parse_list(" tcp, dblp,,tcp ", "transports") == ("tcp", "dblp")
    with pytest.raises(ValueError, match="transports"):
        sweep_plan.parse_list(" , ", "transports")
    with pytest.raises(ValueError, match="repeats"):
        sweep_plan.expand({}, ("tcp",), ("none",), 0, _fake_hash)


def test_preset_file_becomes_a_folder_safe_name():
    assert sweep_plan.run_id_for("dblp", "/x/my burst.toml", 1, "abc") == "dblp-my-burst-r1-abc"


def test_resume_decision(tmp_path):
    assert sweep_plan.decide(tmp_path / "never") == Decision.run
    write_run(tmp_path, "ok")
    assert sweep_plan.decide(tmp_path / "ok") == Decision.skip
    write_run(tmp_path, "bad", status="failed")
    assert sweep_plan.decide(tmp_path / "bad") == Decision.retry
    write_run(tmp_path, "crashed", status="running")
    assert sweep_plan.decide(tmp_path / "crashed") == Decision.retry
    (tmp_path / "empty").mkdir()
    assert sweep_plan.decide(tmp_path / "empty") == Decision.retry
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "run.json").write_text("{")
    assert sweep_plan.decide(tmp_path / "torn") == Decision.retry


def test_aside_path_picks_first_free(tmp_path):
    d = tmp_path / "r"
    assert sweep_plan.aside_path(d).name == "r.prev1"
    (tmp_path / "r.prev1").mkdir()
    assert sweep_plan.aside_path(d).name == "r.prev2"


@dataclass
class _Outcome:
    status: str
    run_dir: Path
    summary: dict
    reason: str = ""


class _Orchestrator:
    """Stands in for run_experiment in the command's plumbing test: writes a synthetic
    run folder (no network) with the status scripted per transport."""

    def __init__(self, status_of):
        self.calls = []
        self.status_of = status_of

    def __call__(self, planned, out_root, run_id=None, on_event=None):
        spec = planned.spec
        self.calls.append((run_id, spec.seed, spec.transport))
        status = self.status_of.get(spec.transport, "ok")
        d = write_run(
            out_root,
            run_id,
            transport=spec.transport,
            preset=spec.burst,
            seed=spec.seed,
            status=status,
            burst_ms={"optireduce": 300.0, "dblp": 60.0}.get(spec.transport, 900.0),
        )
        return _Outcome(status, d, {"p50_ms": 20.0})


def test_sweep_command_runs_then_resumes_skipping_finished(tmp_path, monkeypatch):
    runner = CliRunner()
    fake = _Orchestrator({"tcp": "failed"})
    monkeypatch.setattr(experiment, "run_experiment", fake)
    args = ["sweep", "--transports", "optireduce,tcp", "--bursts", "heavy"]
    args += ["--repeats", "2", "--out", str(tmp_path / "sw")]
    res = runner.invoke(app, args)
    assert res.exit_code == 1, res.output  # the tcp runs failed
    assert len(fake.calls) == 4
    seeds = {}
    for _run_id, seed, transport in fake.calls:
        seeds.setdefault(seed, set()).add(transport)
    assert seeds == {0: {"optireduce", "tcp"}, 1: {"optireduce", "tcp"}}
    report = (tmp_path / "sw" / "report" / "report.md").read_text()
    assert "FAILED" in report  # the failed runs are flagged, not aggregated
    # no dblp run, so no paper ratios: the headline falls back to the latency table
    assert "Headline: Round latency" in report and "Headline: The design comparison" not in report

    fake2 = _Orchestrator({})
    monkeypatch.setattr(experiment, "run_experiment", fake2)
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert sorted(t for _, _, t in fake2.calls) == ["tcp", "tcp"]  # only the failed ones
    assert len(list((tmp_path / "sw").glob("tcp-*.prev1"))) == 2
    res = runner.invoke(app, args + ["--dry-run"])
    assert res.exit_code == 0 and "4 done, 0 to run" in res.output


def test_sweep_rejects_unknown_preset_before_running(tmp_path, monkeypatch):
    fake = _Orchestrator({})
    monkeypatch.setattr(experiment, "run_experiment", fake)
    res = CliRunner().invoke(
        app, ["sweep", "--bursts", "nosuchpreset", "--out", str(tmp_path), "--repeats", "1"]
    )
    assert res.exit_code == 2 and "burst" in res.output
    assert fake.calls == []


def test_bench_variants_share_seeds_and_get_their_own_folders():
    variants = {
        "tcp": {"transport": "tcp"},
        "tcp-rto5ms": {"transport": "tcp", "tcp_rto_min_ms": 5.0},
        "optireduce-fixed": {"transport": "optireduce", "optireduce_mode": "fixed"},
    }
    plan = sweep_plan.expand_variants({"seed": 3}, variants, ("heavy",), 2, _fake_hash)
    assert [p.variant for p in plan[:3]] == list(variants)
    assert [p.transport for p in plan[:3]] == ["tcp", "tcp", "optireduce"]
    assert {p.seed for p in plan if p.repeat == 1} == {4}
    assert plan[1].spec["tcp_rto_min_ms"] == 5.0 and plan[1].run_id.startswith("tcp-rto5ms-")
