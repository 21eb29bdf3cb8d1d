"""A transport reaches the report by its traits (registry -> run.json -> analysis), never by its
name: a policy analysis has never heard of lands in the comparison its roles name. Also the
labels run.json's settings give, and the migration of a run.json from before traits."""

from __future__ import annotations

import json
import shutil

import pytest
from synthetic_runs import write_run

from analysis.load import label_of, load_runs
from analysis.report import write_report
from analysis.schema import RunInfo, SchemaError
from testbed.run.migrate import migrate
from workloads.transport.completion import (
    POLICIES,
    CompletionPolicy,
    StageProgress,
    Traits,
    Verdict,
    register,
)

NAME = "throwaway-quota"


@pytest.fixture
def throwaway():
    """A policy registered for one test only: the paper's baseline, by its traits."""

    @register
    class Throwaway(CompletionPolicy):
        name = NAME
        traits = Traits("bounded-loss", uses_epsilon=True, roles={"paper": "baseline"})

        def verdict(self, p: StageProgress, now: float) -> Verdict:
            return Verdict(done=True)

    yield Throwaway
    del POLICIES[NAME]


def test_a_new_policy_is_named_in_the_report_with_its_role(throwaway, tmp_path):
    dirs = []
    for rep in range(2):
        dirs.append(write_run(tmp_path, f"new-{rep}", transport=NAME, seed=rep, burst_ms=200.0,
                              spec={"epsilon": 0.01}))  # fmt: skip
        dirs.append(write_run(tmp_path, f"dblp-{rep}", transport="dblp", seed=rep, burst_ms=50.0))
    info = json.loads((dirs[0] / "run.json").read_text())
    assert info["transport_traits"]["roles"] == {"paper": "baseline"}
    rep = write_report(dirs, tmp_path / "rep")
    label = f"{NAME} P=0.01"  # it uses ε without phases: labelled by its fixed tolerance
    paper = rep.tables["paper"]
    assert list(zip(paper.comparison, paper.label, paper.baseline, strict=True)) == [
        ("paper", "dblp", label)
    ]
    assert paper.published_event_ratio_max.iloc[0] == 5.88
    text = rep.path.read_text()
    assert rep.headline_title.startswith("The paper's comparison (published: ")
    assert f"| heavy | dblp | {label} |" in text.split("## Round latency")[0]
    assert f"each transport vs `{label}` (paper comparison)" in text


def _info(transport: str, **kw) -> RunInfo:
    from workloads.transport.completion import transport_traits

    traits = transport_traits(transport).as_dict()
    return RunInfo(run_id="r", status="ok", transport=transport, transport_traits=traits, **kw)


@pytest.mark.parametrize(
    ("transport", "spec", "params", "label"),
    [
        ("dblp", {"phase": "on"}, {}, "dblp"),
        ("dblp", {}, {"phase": {"mode": "paper"}, "config": {"stop": "early"}},
         "dblp (paper phase, stop early)"),
        ("dblp", {"phase": "paper"}, {}, "dblp (paper phase)"),
        ("dblp", {}, {"phase": {"mode": "off"}}, "dblp-phase-off"),
        ("dblp", {}, {"phase": {"enabled": False}, "config": {"stop": "idle"}}, "dblp-phase-off"),
        ("mlt", {"epsilon": 0.008, "stop": "early"}, {}, "mlt P=0.008 (stop early)"),
        ("mlt", {}, {"phase": {"mode": "off", "pinned_epsilon": 0.008}}, "mlt P=0.008"),
        ("optireduce", {"optireduce_mode": "fixed"}, {}, "optireduce-fixed"),
        ("tcp", {"tcp_rto_min_ms": 5.0}, {}, "tcp-rto5ms"),
    ],
)  # fmt: skip
def test_a_label_says_what_differs_from_the_defaults(transport, spec, params, label):
    assert label_of(_info(transport, spec=spec, transport_params=params)) == label


def test_a_run_json_without_traits_is_refused_until_migrated(tmp_path):
    d = write_run(tmp_path, "old", transport="tcp", preset="sham")
    path = d / "run.json"
    info = json.loads(path.read_text())
    del info["transport_traits"], info["preset_role"]
    path.write_text(json.dumps(info, indent=2) + "\n")
    before = path.read_text()
    with pytest.raises(SchemaError, match="testbed.run.migrate"):
        load_runs([d])
    assert migrate(d) and not migrate(d)  # once
    runs = load_runs([d]).runs.iloc[0]
    assert (runs.completion, runs.role_design, runs.preset_role) == ("exact", "baseline", "control")
    after = path.read_text().splitlines()
    assert '  "preset_role": "control",' in after and '    "completion": "exact",' in after
    rest = iter(after)
    assert all(line in rest for line in before.splitlines())  # the old lines, in order, kept


def test_migrate_refuses_an_unknown_preset(tmp_path):
    d = write_run(tmp_path, "odd", transport="tcp")
    info = json.loads((d / "run.json").read_text())
    del info["transport_traits"], info["preset_role"]
    info["preset"] = "no-such-preset"
    (d / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    with pytest.raises(ValueError, match="no-such-preset"):
        migrate(d)
    shutil.rmtree(d)


def test_presets_declare_their_role_in_their_toml():
    from testbed.bursts import presets

    roles = {name: presets.load(name).role for name in presets.builtin_names()}
    assert roles["none"] == "calm" and roles["sham"] == "control"
    assert {r for n, r in roles.items() if n not in ("none", "sham")} == {"burst"}
    with pytest.raises(presets.PresetError, match="role"):
        presets.parse_preset('name = "x"\nrole = "quiet"\n')
