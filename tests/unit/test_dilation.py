"""Time dilation without root: the tables' mapping back to emulated time, the scheduler's
stretched playback, the worker's scaled transport, and how `auto` chooses D."""

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis import schema
from analysis.fidelity import DAMAGE, MACHINE_TOLERANCE, Fidelity
from testbed.bursts import presets
from testbed.bursts.schedule import Event
from testbed.bursts.scheduler import BurstScheduler
from testbed.run import dilation
from testbed.run.launch import write_worker_spec
from testbed.spec import RunSpec, SpecError, build_spec
from topologies.model import Direction
from workloads import args as worker_args
from workloads import rank, steps

#: Float columns that carry no time or rate: nothing to scale.
UNITLESS = {"delivered_loss", "epsilon", "train_loss", "lr", "test_acc", "test_loss",
            "replica_drift", "magnitude", "loss"}  # fmt: skip


def test_every_float_column_has_a_unit_or_none_on_purpose():
    for table, cols in schema.TABLES.items():
        for c in cols:
            if c.kind == "float":
                assert (dilation.unit_of(c.name) is None) == (c.name in UNITLESS), (table, c.name)


def _rounds(t0: float) -> pd.DataFrame:
    row = {c.name: 0 for c in schema.TABLES["rounds"]} | {
        "run_id": "r", "transport": "dblp", "stage": "total", "train_phase": "stable",
        "cap_hit": False, "is_warmup": False,
    }  # fmt: skip
    rows = [
        row | {"round": 0, "t_start_s": t0, "t_end_s": t0 + 0.4, "latency_ms": 400.0,
               "cpu_wait_ms": 40.0, "loop_late_ms": 8.0, "bytes": 1 << 20, "epsilon": 0.1},
        row | {"round": 1, "t_start_s": t0 + 2.0, "t_end_s": t0 + 2.4, "latency_ms": 400.0,
               "cpu_wait_ms": 0.0, "loop_late_ms": math.nan, "bytes": 1 << 20, "epsilon": 0.1},
    ]  # fmt: skip
    return schema.coerce("rounds", rows)


def test_undilate_maps_times_around_one_anchor_and_divides_durations():
    t0 = 1000.0
    out = dilation.undilate("rounds", _rounds(t0), 4.0, t0)
    assert out["t_start_s"].tolist() == [t0, t0 + 0.5]
    assert out["t_end_s"].tolist() == [t0 + 0.1, t0 + 0.6]
    assert out["latency_ms"].tolist() == [100.0, 100.0]
    assert out["cpu_wait_ms"].tolist() == [10.0, 0.0]
    assert out["loop_late_ms"].iloc[0] == 2.0 and math.isnan(out["loop_late_ms"].iloc[1])
    assert out["bytes"].tolist() == [1 << 20] * 2 and out["epsilon"].tolist() == [0.1, 0.1]
    schema.validate("rounds", out)
    same = dilation.undilate("rounds", _rounds(t0), 1.0, t0)
    pd.testing.assert_frame_equal(same, _rounds(t0))
    with pytest.raises(ValueError, match="dilation"):
        dilation.undilate("rounds", _rounds(t0), 0.5, t0)


def test_probe_rates_are_scaled_up_and_rtts_down():
    probes = schema.coerce("probes", [{
        "run_id": "r", "probe": "iperf3", "t_start_s": 10.0, "t_end_s": 10.4, "mbps": 25.0,
        "sent": 10, "lost": 1, "loss": 0.1, "rtt_ms": 8.0,
    }])  # fmt: skip
    out = dilation.undilate("probes", probes, 4.0, 10.0)
    assert (out["t_end_s"][0], out["mbps"][0], out["rtt_ms"][0]) == (10.1, 100.0, 2.0)
    assert (out["sent"][0], out["loss"][0]) == (10, 0.1)


def test_bursts_played_dilated_line_up_with_rounds_once_undilated(tmp_path):
    ev = Event(0, "h1-r_e0_0", Direction("r_e0_0", "h1"), "loss", 0.5, {"mode": "random"}, 0.5,
               0.6)  # fmt: skip
    sched = BurstScheduler(None, [ev], "iptables", "r", time_scale=4.0)
    sched.t0 = 1000.0
    (row,) = sched.rows(t_stop=1003.0)
    assert (row["planned_start_s"], row["planned_end_s"]) == (1002.0, 1002.4)  # played 4x slow
    schema.write_table(tmp_path, "bursts", [row])
    schema.write_table(tmp_path, "rounds", _rounds(1000.0))
    assert dilation.undilate_run(tmp_path, 4.0, 1000.0) == ["rounds", "bursts"]
    bursts, rounds = schema.read_table(tmp_path, "bursts"), schema.read_table(tmp_path, "rounds")
    assert bursts["planned_start_s"][0] == pytest.approx(1000.5)  # the schedule's own time
    assert bursts["planned_end_s"][0] == pytest.approx(1000.6)
    # round 1 ran (played) from 1002.0 to 1002.4, inside the played burst: undilated, still so
    assert rounds["t_start_s"][1] == pytest.approx(1000.5)
    assert rounds["t_end_s"][1] == pytest.approx(1000.6)


def test_spec_takes_a_factor_or_auto_and_keeps_old_hashes():
    assert RunSpec().dilation == "auto" and build_spec(dilation="4").dilation == 4.0
    assert build_spec(dilation="auto").dilation == "auto"
    # D = 1 (the default before auto) and auto keep the hash every earlier run has.
    same = {RunSpec(dilation=d).spec_hash() for d in (1, "auto")}
    assert same == {RunSpec().spec_hash()} == {"6722478804d5"}
    assert RunSpec(dilation=2).spec_hash() not in same
    for bad in ("0.5", "fast", "5000"):
        with pytest.raises(SpecError) as e:
            build_spec(dilation=bad)
        assert e.value.flag == "--dilation"


def test_worker_gets_the_resolved_dilation_and_scales_its_transport(tmp_path):
    with pytest.raises(ValueError, match="auto"):
        RunSpec(dilation="auto").worker_spec()
    spec = RunSpec(dilation="auto", bw=100.0, t_max_ms=500.0, mtu=9000)
    path = write_worker_spec(spec, tmp_path, dilation=4.0)
    args = worker_args.parse_args(["--spec", str(path), "--rank", "0", "--world", "2"])
    assert (args.spec.dilation, args.spec.pace_mbps) == (4.0, 95.0)  # the spec stays emulated
    cfg = rank.transport_config(args.spec)
    assert (cfg.rate_mbps, cfg.t_max_ms, cfg.time_scale, cfg.mtu) == (23.75, 2000.0, 4.0, 9000)
    by_hand = rank.transport_config(worker_args.parse_args(["--dilation", "2"]).spec)
    assert by_hand.rate_mbps == 50.0  # the transport's default rate, dilated too
    assert rank.transport_config(worker_args.parse_args([]).spec).rate_mbps == 100.0


def test_compute_is_stretched_by_d_minus_one_times_itself(monkeypatch):
    slept = []
    monkeypatch.setattr(steps.time, "sleep", slept.append)
    assert steps.stretch_compute(step_ms=130.0, comm_ms=100.0, dilation=4.0) == 90.0
    assert slept == [0.09]
    assert steps.stretch_compute(step_ms=130.0, comm_ms=100.0, dilation=1.0) == 0.0
    assert slept == [0.09]


def _v(faithful: bool, calm: float = 1.1, *reasons: str) -> Fidelity:
    return Fidelity(faithful, calm_bound_ratio=calm, reasons=reasons)


def test_auto_chooses_the_smallest_faithful_d():
    d, why = dilation.choose([(1.0, [_v(False, 1.1, "late")]), (2.0, [_v(True)])])
    assert d == 2.0 and "D=1 unfaithful, D=2 faithful" in why
    d, why = dilation.choose([(1.0, [_v(False)]), (8.0, [_v(False, 1.1, "slow")])])
    assert d == 8.0 and "no calibration was faithful" in why and "slow" in why
    d, why = dilation.choose([(1.0, [_v(True)]), (2.0, [_v(True)])], {1.0: "starved"})
    assert d == 2.0 and "D=1 short of CPU, D=2 faithful" in why
    d, why = dilation.choose([(1.0, [_v(True), _v(False)]), (2.0, [_v(True), _v(True)])])
    assert d == 2.0 and "D=1 1 of 2 unfaithful" in why


def _calibrate(tmp_path, monkeypatch, calm_at, repeats=1, faithful_at=lambda d: True):
    """`dilation.calibrate` with a run that leaves a folder named for its spec and a verdict
    that reads the calm ratio the test sets for that D (and repeat)."""
    import analysis.fidelity

    spec = RunSpec(workload="allreduce", burst="heavy", size_mib=2.0, mtu=9000, label="x")
    ran = []

    def run(s, out_dir):
        ran.append(s)
        return "ok", out_dir / s.run_id, ""

    def judge(run_dir, late_share):
        s = next(s for s in ran if s.run_id == run_dir.name)
        repeat = int(s.run_id.partition("-")[2] or 0)
        return _v(faithful_at(s.dilation), calm_at(s.dilation, repeat))

    monkeypatch.setattr(analysis.fidelity, "judge_run", judge)
    return dilation.calibrate(spec, tmp_path, run, repeats=repeats), ran, spec


def test_calibration_runs_the_runs_own_allreduce_until_faithful(tmp_path, monkeypatch):
    found, ran, _ = _calibrate(
        tmp_path, monkeypatch, lambda d, r: 1.1, faithful_at=lambda d: d >= 4
    )
    # D=4 is taken as is: D=1 and D=2 broke a clause, so no check at 4D is needed
    assert found.dilation == 4.0 and [s.dilation for s in ran] == [1.0, 2.0, 4.0]
    first = ran[0]
    kept = (first.workload, first.rounds, first.size_mib, first.mtu)
    assert kept == ("allreduce", dilation.CALIBRATION_ROUNDS, 2.0, 9000)
    # under heavy's control, written beside the calibrations: the bursts' CPU, not their loss
    assert presets.load(first.burst) == presets.load("heavy").control()
    assert Path(first.burst).parent == tmp_path and "under heavy-control" in found.why
    ref = found.reference
    assert (ref.calm_ratio, ref.dilation, ref.seed) == (pytest.approx(1.1), 4.0, 0)
    with pytest.raises(RuntimeError, match="D=1 failed"):
        dilation.calibrate(RunSpec(), tmp_path, lambda s, o: ("failed", None, "boom"))


@pytest.mark.parametrize(
    ("calm", "chosen", "tried"),
    [
        # measured alone (4-worker all-reduce): D=1 1.035x, D=4 ~0.997x: 3.8%, within 5%
        ({1: 1.035, 2: 1.009, 4: 0.997, 8: 0.99}, 1, [1, 4]),
        # measured with two busy loops: D=1 1.109x, D=2 1.067x (4%: neighbours pass it, while
        # the run at D=1 was 8.3% slower than alone); against D=4 it is 8.7%
        ({1: 1.109, 2: 1.067, 4: 1.02, 8: 1.0}, 4, [1, 2, 4, 8]),
        ({1: 1.40, 2: 1.25, 4: 1.08, 8: 1.07}, 4, [1, 2, 4, 8]),  # a steep slope
        ({1: 1.60, 2: 1.03, 4: 1.02, 8: 1.01}, 2, [1, 2, 4, 8]),
    ],
)
def test_a_faithful_d_that_dilating_speeds_up_is_short_of_cpu(
    tmp_path, monkeypatch, calm, chosen, tried
):
    """A calibration made beside two busy loops judges itself against nothing, and passes. A D
    whose calm rounds AGAINST x its D makes faster beyond the margin was short of CPU."""
    # three repeats a D that agree to 0.3%: the spread's bound is ~1%, the damage floor 5%
    found, ran, _ = _calibrate(
        tmp_path, monkeypatch, lambda d, r: calm[d] * (1 + 0.003 * r), repeats=3
    )
    assert found.dilation == chosen
    assert sorted({s.dilation for s in ran}) == tried
    assert found.reference.calm_ratio == pytest.approx(calm[chosen] * 1.003)
    assert found.reference.tolerance < DAMAGE
    if chosen > 1:
        assert "D=1 short of CPU" in found.why


def test_repeated_calibrations_set_the_tolerance_from_their_spread(tmp_path, monkeypatch):
    spread = {0: 1.10, 1: 1.12, 2: 1.08}  # per repeat, the same at every D
    found, ran, spec = _calibrate(tmp_path, monkeypatch, lambda d, r: spread[r], repeats=3)
    # repeats keep the seed: it sets the paths, and the spread must be the machine's
    assert [(s.run_id, s.seed) for s in ran] == [
        ("D1", spec.seed), ("D1-1", spec.seed), ("D1-2", spec.seed),
        ("D4", spec.seed), ("D4-1", spec.seed), ("D4-2", spec.seed),
    ]  # fmt: skip
    ref = found.reference
    assert found.dilation == 1.0 and ref.calm_ratio == pytest.approx(1.10)
    # s = 0.0182 relative over 4 degrees of freedom; t(0.99, 4) = 3.747; sqrt(1 + 1/3)
    assert ref.tolerance == pytest.approx(3.747 * 0.01818 * (4 / 3) ** 0.5, rel=0.01)
    assert "6 calibrations" in ref.source
    one, _, _ = _calibrate(tmp_path, monkeypatch, lambda d, r: 1.1)
    machine = MACHINE_TOLERANCE["allreduce"]
    assert one.reference.tolerance == machine and "machine" in one.reference.source


def test_a_new_seed_measures_its_reference_at_the_known_d(tmp_path, monkeypatch):
    import analysis.fidelity

    spec = RunSpec(workload="allreduce", seed=7)
    ran = []

    def run(s, out_dir):
        ran.append(s)
        return "ok", out_dir / s.run_id, ""

    monkeypatch.setattr(analysis.fidelity, "judge_run", lambda d, late_share: _v(True, 1.2))
    ref = dilation.reference_at(spec, 2.0, tmp_path, run, repeats=2)
    assert [(s.dilation, s.seed) for s in ran] == [(2.0, 7), (2.0, 7)]  # no ladder
    assert (ref.dilation, ref.seed, ref.calm_ratio) == (2.0, 7, pytest.approx(1.2))
    monkeypatch.setattr(
        analysis.fidelity, "judge_run", lambda d, late_share: _v(False, 1.6, "slow")
    )
    assert dilation.reference_at(spec, 2.0, tmp_path, run) is None


def test_calibrations_come_from_the_environment(monkeypatch):
    monkeypatch.delenv(dilation.CALIBRATIONS_ENV, raising=False)
    assert dilation.calibrations() == 1
    monkeypatch.setenv(dilation.CALIBRATIONS_ENV, "3")
    assert dilation.calibrations() == 3
    for bad in ("0", "three"):
        monkeypatch.setenv(dilation.CALIBRATIONS_ENV, bad)
        with pytest.raises(ValueError, match=dilation.CALIBRATIONS_ENV):
            dilation.calibrations()


def test_reports_say_the_dilation_beside_their_tables():
    from types import SimpleNamespace

    from analysis.report import dilation_line

    def line(*ds):
        return dilation_line(SimpleNamespace(runs=pd.DataFrame({"dilation": ds})))

    assert line(1.0, 1.0) == "Time dilation: none (D = 1 in every run)."
    assert line(4.0).startswith("Time dilation: D = 4: ") and "emulated" in line(4.0)
    assert "D = 1–8 (per run under" in line(1.0, 8.0)


def test_the_cost_line_counts_ds_calibrations_and_verdicts(tmp_path):
    def run(path, d, faithful, wall):
        path.mkdir(parents=True)
        info = schema.RunInfo(run_id=path.name, status="ok", dilation=d, faithful=faithful,
                              wall_s=wall)  # fmt: skip
        schema.write_run_info(path, info)

    run(tmp_path / "a", 1.0, True, 100.0)
    run(tmp_path / "a" / dilation.CALIBRATION_DIR / "D1", 1.0, False, 30.0)
    run(tmp_path / "a" / dilation.CALIBRATION_DIR / "D2", 2.0, True, 45.0)
    run(tmp_path / "b", 2.0, True, 100.0)
    run(tmp_path / "c", 2.0, False, 100.0)
    line = dilation.cost([tmp_path / x for x in ("a", "b", "c", "missing")])
    assert line == (
        "dilation: D=1 x1, D=2 x2; 1 run(s) calibrated (1 min 15 s of calibration runs); "
        "2 of 3 faithful"
    )


@pytest.mark.parametrize("transport", ["dblp", "mlt"])
def test_a_training_run_calibrates_with_its_own_first_steps(transport):
    """A training shape's compute competes with its transport for the cores, so it calibrates
    on its own steps (model, batch, ε schedule kept), not on an all-reduce of its size."""
    spec = RunSpec(workload="train", transport=transport, phase="paper", model="mnist1d",
                   batch_size=64, burst="paper-90", label="x")  # fmt: skip
    calib = dilation.calibration_spec(spec, 2.0, burst="control.toml")
    assert (calib.workload, calib.dilation, calib.burst) == ("train", 2.0, "control.toml")
    assert (calib.model, calib.batch_size, calib.phase) == ("mnist1d", 64, "paper")
    assert calib.steps == dilation.CALIBRATION_STEPS and calib.label is None
    assert dilation.calibration_spec(spec.model_copy(update={"steps": 8}), 1.0).steps == 8


def test_a_d_reached_past_an_unfaithful_one_is_not_checked(tmp_path, monkeypatch):
    """The demo's training shape broke the lateness clause at D=1; D=2 is taken without a
    calibration at D=8 (150 s there). After a check's rejection, load is evident: D=2 is
    checked too."""
    calm = {1: 1.05, 2: 1.02, 4: 1.01, 8: 1.0}
    found, ran, _ = _calibrate(
        tmp_path, monkeypatch, lambda d, r: calm[d], faithful_at=lambda d: d > 1
    )
    assert found.dilation == 2.0 and [s.dilation for s in ran] == [1.0, 2.0]
    load = {1: 1.109, 2: 1.067, 4: 1.02, 8: 1.0}  # measured under two busy loops
    found, ran, _ = _calibrate(tmp_path, monkeypatch, lambda d, r: load[d])
    assert found.dilation == 4.0 and [s.dilation for s in ran] == [1.0, 4.0, 2.0, 8.0]


def test_the_calibration_plays_the_control_of_the_runs_preset(tmp_path):
    """Bursts cost CPU (the player's rule changes, an incast's forwarding): the calibration pays
    it, without the loss, so the D it picks is one the run under bursts can keep up at."""
    burst, played = dilation.calibration_burst(RunSpec(burst="none"), tmp_path)
    assert (burst, played) == ("none", "without bursts") and not any(tmp_path.iterdir())
    burst, played = dilation.calibration_burst(RunSpec(burst="paper-90", workers=4), tmp_path)
    control = presets.load(burst)
    assert control.role == "control" and "paper-90-control" in played
    assert [s.magnitude for s in control.streams] == [0.0]
    # a control the topology cannot play (a sham sender needs an idle neighbour; 15 workers
    # on k=4 leave one idle host): the calibration says so and runs without bursts
    burst, played = dilation.calibration_burst(RunSpec(burst="sham", workers=15), tmp_path)
    assert burst == "none" and "cannot be played here" in played
