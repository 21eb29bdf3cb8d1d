"""The fidelity-control benchmark's pure parts (benchmarks/fidelity_control.py): the damage and
the check of a row against the issue's done-when, the runs' flags and environment, the table."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from benchmarks import allreduce_runs
from benchmarks import fidelity_control as fc
from testbed.spec import RunSpec
from workloads.spec import add_arguments, from_arguments

OUT = Path("results/fc-test")
BY_NAME = {c.name: c for c in fc.CONDITIONS}


def row(condition: str = "busy", faithful: bool | None = True, p50: float | None = 10.0,
        alone_p50: float | None = 10.0, status: str = "ok") -> fc.Row:  # fmt: skip
    return fc.Row("allreduce", condition, status, 1.0, faithful, 1.2, None, p50,
                  alone_p50_ms=alone_p50)  # fmt: skip


def test_damage_is_the_p50_over_the_alone_p50_minus_one():
    assert fc.damage(11.0, 10.0) == pytest.approx(0.10)
    assert fc.damage(9.0, 10.0) == pytest.approx(-0.10)
    assert fc.damage(None, 10.0) is None
    assert fc.damage(10.0, None) is None
    assert fc.damage(10.0, 0.0) is None


def test_a_damaged_run_judged_unfaithful_is_ok():
    r = row(faithful=False, p50=14.0)
    assert fc.check(r) == "ok"
    assert fc.expected(r) == "unfaithful"


def test_a_damaged_run_judged_faithful_is_missed():
    assert fc.check(row(faithful=True, p50=14.0)).startswith("MISSED: damaged but passed")


def test_a_faithful_run_within_the_damage_bound_is_ok():
    assert fc.check(row(faithful=True, p50=10.4)) == "ok"
    assert fc.check(row(faithful=True, p50=9.6)) == "ok"


def test_a_faithful_run_faster_than_the_bound_is_missed_with_its_offset():
    assert fc.check(row(faithful=True, p50=9.2)) == "MISSED: passed but off by -8.0%"


def test_an_undamaged_unfaithful_run_is_ok_but_the_alone_run_must_be_faithful():
    assert fc.check(row(faithful=False, p50=10.2)) == "ok"
    assert fc.check(row("alone", faithful=False)) == "MISSED: alone but unfaithful"
    assert fc.check(row("alone", faithful=True)) == "ok"
    assert fc.expected(row("alone")) == "faithful"


def test_a_null_verdict_is_not_judged():
    r = row(faithful=None, p50=14.0)
    assert fc.check(r) == "not judged"
    assert fc.cells(r)[fc.HEADER.index("faithful")] == "not judged"


def test_without_an_alone_row_there_is_no_damage_and_the_check_says_why():
    busy = fc.with_reference(row(alone_p50=None), [])
    assert busy.alone_p50_ms is None
    assert fc.damage(busy.p50_ms, busy.alone_p50_ms) is None
    assert fc.check(busy) == "not checked: no alone run of the shape with a p50"
    failed_alone = row("alone", status="failed")
    assert fc.with_reference(busy, [failed_alone]).alone_p50_ms is None


def test_the_reference_is_the_shapes_alone_row_and_alone_is_its_own():
    alone = fc.with_reference(row("alone", p50=8.0, alone_p50=None), [])
    assert alone.alone_p50_ms is None  # not in the list it is given
    alone = fc.with_reference(alone, [alone])
    assert alone.alone_p50_ms == 8.0 and fc.damage(8.0, alone.alone_p50_ms) == 0
    other = fc.Row("mnist1d", "alone", "ok", 2.0, True, 1.1, None, 30.0)
    busy = fc.with_reference(row(p50=9.0, alone_p50=None), [other, alone])
    assert busy.alone_p50_ms == 8.0


def test_a_failed_run_is_a_row_with_its_status():
    r = fc.row_of("mnist1d", "busy", {"status": "failed", "faithful": None})
    assert r.status == "failed"
    assert fc.check(r) == "not checked: run failed"
    assert fc.cells(fc.Row("mnist1d", "busy", fc.NO_SUMMARY))[2] == fc.NO_SUMMARY


def test_a_summary_becomes_a_row():
    summary = {
        "status": "ok", "dilation": 2.0, "faithful": False, "p50_ms": 12.5,
        "fidelity": {
            "calm_bound_ratio": 1.61, "reasons": ["a" * 100, "b" * 100],
            "reference": {"calm_ratio": 1.2, "tolerance": 0.08, "dilation": 2.0,
                          "source": "calibration"},
        },
    }  # fmt: skip
    r = fc.with_reference(fc.row_of("allreduce", "busy", summary), [row("alone", p50=10.0)])
    c = dict(zip(fc.HEADER, fc.cells(r), strict=True))
    assert c["D"] == "2" and c["faithful"] == "false" and c["calm/bound"] == "1.61"
    assert c["reference calm/bound"] == "1.20 (D=2, calibration)" and c["tolerance"] == "0.08"
    assert c["damage"] == "+25.0%" and c["expected"] == "unfaithful" and c["check"] == "ok"
    assert len(c["reasons"]) <= fc.REASONS_MAX and c["reasons"].endswith("…")


def test_a_missing_reference_prints_a_dash():
    c = dict(zip(fc.HEADER, fc.cells(row()), strict=True))
    assert c["reference calm/bound"] == "—" and c["tolerance"] == "—"


def test_the_summary_line_counts_ok_rows_and_names_the_misses():
    rows = [row("alone"), row(faithful=True, p50=14.0), row(faithful=None)]
    line = fc.summary_line(rows)
    assert line.startswith("1 of 3 rows ok; misses: allreduce busy: MISSED: damaged but passed")
    assert "not checked: allreduce busy: not judged" in line
    assert fc.summary_line([row("alone")]) == "1 of 1 rows ok; misses: none"


def parsed(flags: list[str]) -> RunSpec:
    """The spec `testbed run` would build from these flags (the generated options)."""
    ap = argparse.ArgumentParser()
    add_arguments(ap, RunSpec)
    return from_arguments(RunSpec, ap.parse_args(flags))


@pytest.mark.parametrize("shape", list(fc.SHAPES))
@pytest.mark.parametrize("condition", list(BY_NAME))
def test_the_flags_of_a_shape_and_condition(shape, condition):
    flags = fc.run_flags(shape, BY_NAME[condition], OUT)
    spec = parsed(flags)
    assert spec.label == f"{shape}-{condition}"
    assert spec.dilation == ("auto" if condition in ("alone", "busy-auto") else 1.0)
    assert spec.burst == "none" and spec.out == OUT / "runs"
    argv = allreduce_runs.testbed_argv(*flags)  # (a `test*` name: not imported bare)
    assert argv[argv.index("--dilation") + 1] == BY_NAME[condition].dilation
    assert "--json" in argv


def test_the_shapes_are_the_runs_the_issue_names():
    allreduce = parsed(fc.run_flags("allreduce", BY_NAME["alone"], OUT))
    assert (allreduce.workload, allreduce.workers, allreduce.size_mib) == ("allreduce", 4, 1.0)
    assert (allreduce.rounds, allreduce.seed, allreduce.topo, allreduce.k) == (60, 5, "fattree", 4)
    assert parsed(fc.run_flags("allreduce-8", BY_NAME["alone"], OUT)).workers == 8
    demo = parsed(fc.run_flags("demo-train", BY_NAME["alone"], OUT))
    assert (demo.workload, demo.model, demo.seed) == ("train", "cnn", 0)
    mnist = parsed(fc.run_flags("mnist1d", BY_NAME["alone"], OUT))
    assert (mnist.workload, mnist.model, mnist.steps) == ("train", "mnist1d", 62)
    assert (mnist.lr, mnist.batch_size, mnist.epochs) == (2e-3, 32, 12)  # the model's recipe


def test_the_env_points_at_the_conditions_cache_and_sets_the_calibrations():
    base = {"PATH": "/usr/bin"}
    env = {c: fc.run_env(base, fc.cache_file(OUT, "mnist1d", BY_NAME[c]), 3) for c in BY_NAME}
    assert base == {"PATH": "/usr/bin"}
    assert all(e["PATH"] == "/usr/bin" for e in env.values())
    assert all(e["DBLP_TESTBED_CALIBRATIONS"] == "3" for e in env.values())
    cache = {c: e["DBLP_TESTBED_CACHE"] for c, e in env.items()}
    assert cache["alone"] == str(OUT / "cache-mnist1d.json") == cache["busy"]
    assert cache["busy-auto"] != cache["alone"] and Path(cache["busy-auto"]).parent == OUT


def test_shapes_flag_takes_a_comma_list_and_refuses_an_unknown_name(capsys):
    args = fc.parse_args(["--shapes", "mnist1d,allreduce", "--out", "x"])
    assert args.shapes == ("mnist1d", "allreduce") and args.busy == 2 and args.calibrations == 3
    assert fc.parse_args([]).shapes == tuple(fc.SHAPES)
    assert str(fc.parse_args([]).out).startswith("results/fidelity-control-")
    with pytest.raises(SystemExit) as e:
        fc.parse_args(["--shapes", "allreduce,resnet-big"])
    assert e.value.code == 2 and "resnet-big" in capsys.readouterr().err


def test_the_allreduce_command_line_is_unchanged_for_other_benchmarks():
    argv = allreduce_runs.allreduce_argv("x", "--rounds", "3")
    spec = parsed(argv[argv.index("run") + 1 :][1:])  # past `run --json`
    assert (spec.workload, spec.burst, spec.label, spec.rounds) == ("allreduce", "none", "x", 3)


@pytest.mark.parametrize(
    "module", ["dilation_invariance", "dblp_tail", "transport_fattree_cpu", "transport_profile"]
)
def test_the_other_benchmarks_still_import_their_run_helpers(module):
    importlib.import_module(f"benchmarks.{module}")


def test_the_one_calibration_tolerance_comes_from_the_alone_runs_repeats(tmp_path):
    """What MACHINE_TOLERANCE holds: t * s * sqrt(2) over the repeats at the chosen D and
    above, all faithful; a D below it (short of CPU) and the `last` link are left out."""
    from analysis import fidelity, schema
    from testbed.run.dilation import CALIBRATION_DIR

    def run(path, d, ratio, faithful=True):
        path.mkdir(parents=True, exist_ok=True)
        info = schema.RunInfo(run_id=path.name, status="ok", dilation=d, faithful=faithful,
                              fidelity={"calm_bound_ratio": ratio})  # fmt: skip
        schema.write_run_info(path, info)

    run(tmp_path, 2.0, 1.0)
    calib = tmp_path / CALIBRATION_DIR
    for name, d, ratio in [("D1", 1, 1.3), ("D1-1", 1, 1.1), ("D2", 2, 1.0), ("D2-1", 2, 1.02),
                           ("D8", 8, 0.99), ("D8-1", 8, 1.01)]:  # fmt: skip
        run(calib / name, d, ratio)
    (calib / "last").symlink_to(calib / "D8-1")
    tol, s, dof = fc.one_calibration_tolerance(tmp_path)
    expect_s, expect_dof, _ = fidelity.spread([[1.0, 1.02], [0.99, 1.01]])
    assert (s, dof) == (pytest.approx(expect_s), 2) and expect_dof == 2
    assert tol == pytest.approx(fidelity.t_bound(expect_s, 2, 1, 1))
    assert fc.one_calibration_tolerance(tmp_path / CALIBRATION_DIR / "D2") is None
