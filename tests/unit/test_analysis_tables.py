import json
import subprocess
import sys

import pytest
from synthetic_runs import expected_train_s, write_run

from analysis import tables
from analysis.load import load_runs, mixed_specs

N_BURST = 10  # synthetic runs' default burst_rounds ((10, 20),)


@pytest.fixture(scope="module")
def three_way(tmp_path_factory):
    """optireduce / dblp / tcp, 3 repeats each with the same seeds; dblp repeat 1 unfaithful."""
    tmp_path = tmp_path_factory.mktemp("three_way")
    dirs = []
    for rep in range(3):
        dirs.append(
            write_run(tmp_path, f"opt-{rep}", transport="optireduce", seed=rep, burst_ms=300.0)
        )
        dirs.append(
            write_run(
                tmp_path,
                f"dblp-{rep}",
                transport="dblp",
                seed=rep,
                burst_ms=60.0,
                unfaithful=rep == 1,
                final_acc=0.92,
            )
        )
        dirs.append(write_run(tmp_path, f"tcp-{rep}", transport="tcp", seed=rep, burst_ms=900.0))
    return load_runs(dirs)


def _row(df, **eq):
    m = df
    for k, v in eq.items():
        m = m[m[k] == v]
    assert len(m) == 1, (eq, m)
    return m.iloc[0]


def test_round_latency_is_max_over_ranks_without_warmup(three_way):
    rl = tables.round_level(three_way)
    r = rl[rl.run_id == "dblp-0"]
    assert len(r) == 59  # 60 rounds minus the warm-up round
    assert r.loc[r.in_burst, "latency_ms"].eq(60.0).all()
    assert r.loc[~r.in_burst, "latency_ms"].eq(20.0).all()
    assert int(r.in_burst.sum()) == N_BURST


def test_latency_table_applies_quantile_rule(three_way):
    lat = tables.latency_table(three_way)
    d = _row(lat, label="dblp")
    assert d.rounds_in == 3 * N_BURST and d.rounds_out == 3 * (59 - N_BURST)
    assert d.p50_in_ms == 60.0 and d.p50_in_rule == "p50 (n=30)"  # 30 samples >= 20
    assert d.p99_in_ms == 60.0 and d.p99_in_rule == "max (n=30)"  # 30 < 1000: the max
    assert d.p50_out_ms == 20.0 and d.max_all_ms == 60.0


def test_latency_quantile_without_rounds_is_nan(tmp_path):
    d = write_run(tmp_path, "calm", transport="dblp", preset="none", burst_rounds=())
    row = tables.latency_table(load_runs([d])).iloc[0]
    assert row.rounds_in == 0 and row.p50_in_rule == "none (n=0)"
    assert row.p50_in_ms != row.p50_in_ms and row.max_in_ms != row.max_in_ms  # NaN


def test_in_burst_mean_ratio_and_e2e_reduction(three_way):
    comp = tables.comparisons(tables.run_metrics(three_way))
    c = _row(comp, label="dblp", baseline="optireduce")
    assert c.burst_mean_ratio == pytest.approx(5.0)
    assert (c.burst_mean_ratio_lo, c.burst_mean_ratio_hi) == pytest.approx((5.0, 5.0))
    assert c.paired
    t_dblp = expected_train_s(60, 20.0, 60.0, N_BURST)
    t_opt = expected_train_s(60, 20.0, 300.0, N_BURST)
    assert c.e2e_reduction == pytest.approx(1 - t_dblp / t_opt)
    assert c.e2e_reduction_max == pytest.approx(c.e2e_reduction)  # three identical seeds
    assert c.acc_delta == pytest.approx(0.02)
    assert _row(comp, label="dblp", baseline="tcp").burst_mean_ratio == pytest.approx(15.0)
    assert _row(comp, label="optireduce", baseline="tcp").burst_mean_ratio == pytest.approx(3.0)


def test_paper_rows_per_comparison_published_beside_the_papers_only(three_way):
    """No mlt run: every system-vs-baseline row is the design comparison's (dblp vs optireduce
    and tcp, by their traits), and no published figure stands beside it."""
    t = tables.build_tables(three_way)
    paper = t["paper"]
    assert set(paper.comparison) == {"design"} and set(t["comparisons"].comparison) == {"design"}
    assert set(paper.baseline) == {"optireduce", "tcp"}
    assert set(paper.label) == {"dblp"}  # only the system, not every transport vs a baseline
    assert "tcp" in set(t["comparisons"].query("baseline == 'optireduce'").label)
    d = _row(paper, label="dblp", baseline="optireduce")
    # the per-event statistic: every one of the 3 seeds' 10 hit rounds, 300 ms over 60 ms
    assert d.event_ratio_max == pytest.approx(5.0) and d.event_ratio_median == pytest.approx(5.0)
    assert (d.events, d.seeds) == (3, 3)  # one event per seed (10 rounds long)
    assert d.calm_ratio == pytest.approx(1.0)
    assert paper[[c for c in paper if c.startswith("published_")]].isna().all().all()
    c = _row(t["comparisons"], label="dblp", baseline="optireduce")
    assert (d.e2e_reduction, d.e2e_reduction_lo, d.e2e_reduction_hi, d.n) == (
        c.e2e_reduction, c.e2e_reduction_lo, c.e2e_reduction_hi, c.n
    )  # fmt: skip
    assert (d.e2e_reduction_max, d.acc_delta, d.acc_delta_lo, d.acc_delta_hi) == (
        c.e2e_reduction_max, c.acc_delta, c.acc_delta_lo, c.acc_delta_hi
    )  # fmt: skip


def test_the_papers_comparison_pairs_dblp_with_mlt_beside_the_published_figures(tmp_path):
    dirs = []
    for rep in range(2):
        dirs.append(write_run(tmp_path, f"mlt-{rep}", transport="mlt", seed=rep, burst_ms=240.0,
                              spec={"epsilon": 0.05}))  # fmt: skip
        dirs.append(write_run(tmp_path, f"dblp-{rep}", transport="dblp", seed=rep, burst_ms=60.0))
        dirs.append(write_run(tmp_path, f"opt-{rep}", transport="optireduce", seed=rep))
    t = tables.build_tables(load_runs(dirs))
    paper = t["paper"]
    assert list(paper.comparison) == ["paper", "design"]  # the paper's first
    d = _row(paper, comparison="paper")
    assert (d.label, d.baseline) == ("dblp", "mlt P=0.05")  # mlt's label: its fixed tolerance
    assert d.event_ratio_max == pytest.approx(4.0)
    assert d.published_event_ratio_max == 5.88
    assert d.published_e2e_reduction_mean == 0.244 and d.published_e2e_reduction_max == 0.339
    assert _row(paper, comparison="design").published_event_ratio_max != 5.88  # NaN


def test_paper_rows_per_bursty_preset_from_the_per_event_statistic(tmp_path):
    """A row per bursty preset; none and sham are left out. The burst figure is the max over
    events of the paired hit-round ratio: one event at 600 ms beside nine at 300 ms gives a
    max of 10x where the ratio of in-burst means says 5.5x."""
    dirs = []
    for preset, opt_ms in (("none", 20.0), ("sham", 20.0), ("heavy", 300.0), ("light", 120.0)):
        bursty = preset in ("heavy", "light")
        rounds = tuple((i, i + 1) for i in range(10, 20)) if bursty else ((10, 20),)
        dirs.append(
            write_run(tmp_path, f"o-{preset}", transport="optireduce", preset=preset,
                      burst_ms=opt_ms, burst_rounds=rounds)
        )  # fmt: skip
        dirs.append(
            write_run(tmp_path, f"d-{preset}", transport="dblp", preset=preset,
                      burst_ms=60.0 if bursty else 20.0, burst_rounds=rounds)
        )  # fmt: skip
    from analysis.schema import read_table, write_table

    r = read_table(dirs[4], "rounds")  # o-heavy: the round event 0 hit takes twice as long
    r.loc[r["round"] == 10, "latency_ms"] *= 2
    write_table(dirs[4], "rounds", r)
    t = tables.build_tables(load_runs(dirs))
    paper = t["paper"].set_index("preset")
    assert sorted(paper.index) == ["heavy", "light"]
    heavy, light = paper.loc["heavy"], paper.loc["light"]
    assert heavy.event_ratio_max == pytest.approx(10.0)
    assert heavy.event_ratio_median == pytest.approx(5.0) and heavy.events == 10
    assert light.event_ratio_max == pytest.approx(2.0)
    comp = t["comparisons"].set_index(["preset", "label", "baseline"])
    assert comp.loc[("heavy", "dblp", "optireduce"), "burst_mean_ratio"] == pytest.approx(5.5)
    assert heavy.e2e_reduction == comp.loc[("heavy", "dblp", "optireduce"), "e2e_reduction"]


def test_paper_rows_are_not_optireduce_variants_vs_each_other(tmp_path):
    dirs = [
        write_run(tmp_path, "oa", transport="optireduce"),
        write_run(tmp_path, "of", transport="optireduce", spec={"optireduce_mode": "fixed"}),
        write_run(tmp_path, "d", transport="dblp", burst_ms=60.0),
    ]
    t = tables.build_tables(load_runs(dirs))
    assert set(zip(t["paper"].label, t["paper"].baseline, strict=True)) == {
        ("dblp", "optireduce"),
        ("dblp", "optireduce-fixed"),
    }
    assert "optireduce-fixed" in set(t["comparisons"].label)  # still compared elsewhere


def test_no_baseline_of_a_comparison_means_no_paper_ratios(tmp_path):
    """reliable is in no comparison (the exact control), so it is no one's baseline."""
    dirs = [
        write_run(tmp_path, "reliable-0", transport="reliable"),
        write_run(tmp_path, "dblp-0", transport="dblp"),
    ]
    t = tables.build_tables(load_runs(dirs))
    assert t["paper"].empty and t["comparisons"].empty


def test_unfaithful_run_is_marked_in_every_table_using_it(three_way):
    t = tables.build_tables(three_way)
    for name in ("latency", "training", "loss"):
        assert _row(t[name], label="dblp")["validity"] == "unfaithful 1/3", name
        assert _row(t[name], label="tcp")["validity"] == "", name
    assert "unfaithful" in _row(t["comparisons"], label="dblp", baseline="optireduce")["validity"]
    assert "unfaithful" in _row(t["paper"], label="dblp", baseline="tcp")["validity"]
    assert bool(_row(t["validity"], run_id="dblp-1").unfaithful)


def test_failed_run_is_left_out_and_named(tmp_path):
    d = [
        write_run(tmp_path, "a", transport="dblp", status="failed", reason="worker died"),
        write_run(tmp_path, "b", transport="dblp", seed=1),
    ]
    t = tables.build_tables(load_runs(d))
    lat = _row(t["latency"], label="dblp")
    assert lat.runs == 1 and lat.validity == "left out: failed 1"
    v = _row(t["validity"], run_id="a")
    assert v.reason == "worker died" and not v.aggregated
    assert _row(t["validity"], run_id="b").aggregated


def test_interrupted_repeat_is_never_averaged_with_an_ok_one(tmp_path):
    """An interrupted repeat stopped early: a shorter training and a lower accuracy. Averaged
    with the complete repeat it would cut the training time and the accuracy roughly in half
    (issue 9: 78.2 -> 51.1 s, 0.972 -> 0.735); aggregates use the ok repeat only."""
    ok = dict(transport="dblp", n_rounds=60, final_acc=0.972, burst_ms=60.0)
    d = [
        write_run(tmp_path, "ok", seed=0, **ok),
        write_run(
            tmp_path,
            "cut",
            seed=1,
            **{**ok, "n_rounds": 25, "final_acc": 0.5},
            status="interrupted",
            reason="received SIGTERM",
        ),
        write_run(tmp_path, "opt", transport="optireduce", seed=0, burst_ms=300.0),
    ]
    runs = load_runs(d)
    t = tables.build_tables(runs)
    tr = _row(t["training"], label="dblp")
    assert tr.runs == 1
    assert tr.train_s == pytest.approx(expected_train_s(60, 20.0, 60.0, N_BURST))
    assert tr.final_acc == pytest.approx(0.972)
    assert tr.validity == "left out: interrupted 1"
    lat = _row(t["latency"], label="dblp")
    assert lat.runs == 1 and lat.rounds_all == 59
    c = _row(t["comparisons"], label="dblp", baseline="optireduce")
    assert c.n == 1 and "left out: interrupted 1" in c.validity
    t_opt = expected_train_s(60, 20.0, 300.0, N_BURST)
    assert c.e2e_reduction == pytest.approx(1 - expected_train_s(60, 20.0, 60.0, N_BURST) / t_opt)
    # the partial run stays visible per run, with its status
    m = _row(t["runs"], run_id="cut")
    assert m.status == "interrupted" and m.final_acc == pytest.approx(0.5)
    assert list(runs.left_out()["run_id"]) == ["cut"]


def test_rejected_datagrams_are_flagged_wherever_the_run_is_used(tmp_path):
    d = [
        write_run(tmp_path, "d", transport="dblp", rejections={"source": 3, "nonfinite": 1}),
        write_run(tmp_path, "o", transport="optireduce", rejections={}),
    ]
    t = tables.build_tables(load_runs(d))
    v = _row(t["validity"], run_id="d")
    assert v.rejected == 4 and v.rejections == "source 3, nonfinite 1"
    assert _row(t["validity"], run_id="o").rejected == 0
    assert _row(t["latency"], label="dblp").validity == "rejected datagrams 1/1"
    assert _row(t["latency"], label="optireduce").validity == ""
    assert "rejected datagrams" in _row(t["paper"], label="dblp").validity


def test_unpaired_when_repeats_differ(tmp_path):
    d = [
        write_run(tmp_path, "o0", transport="optireduce", seed=0, burst_ms=300.0),
        write_run(tmp_path, "o1", transport="optireduce", seed=1, burst_ms=200.0),
        write_run(tmp_path, "d0", transport="dblp", seed=0, burst_ms=50.0),
    ]
    c = _row(tables.comparisons(tables.run_metrics(load_runs(d))), label="dblp")
    assert not c.paired
    assert c.burst_mean_ratio == pytest.approx((300.0 * 200.0) ** 0.5 / 50.0)


def test_training_loss_and_counters(three_way):
    t = tables.build_tables(three_way, target_acc=0.45)
    tr = _row(t["training"], label="tcp")
    assert tr.train_s == pytest.approx(expected_train_s(60, 20.0, 900.0, N_BURST))
    assert tr.final_acc == pytest.approx(0.9) and tr.target_acc == 0.45
    assert tr.tta_reached == 3 and tr.runs == 3
    m = t["runs"].set_index("run_id")
    c = _row(t["comparisons"], label="dblp", baseline="optireduce")
    assert c.tta_reduction == pytest.approx(1 - m.loc["dblp-0", "tta_s"] / m.loc["opt-0", "tta_s"])
    # acc reaches 0.45 at step 30 of 59 (0.9 * 30/59 = 0.4576)
    assert tr.tta_s > 0
    loss = _row(t["loss"], label="dblp")
    assert loss.loss_in == pytest.approx(0.05) and loss.loss_out == 0.0
    # one applied event (the unapplied one is not counted) in 60 steps
    assert loss.bursts_per_100_steps == pytest.approx(100 / 60)


def test_bursts_after_the_last_step_do_not_count(tmp_path):
    import pandas as pd

    from analysis.schema import read_table, write_table

    d = write_run(tmp_path, "x", transport="dblp")
    b = read_table(d, "bursts")
    late = b[b.event_id == 0].assign(event_id=7)
    late[["applied_start_s", "applied_end_s"]] += 1000.0  # long after training ended
    write_table(d, "bursts", pd.concat([b, late], ignore_index=True))
    m = tables.run_metrics(load_runs([d])).iloc[0]
    assert m.bursts == 1 and tables.summary(d)["bursts"] == 1


def test_nacks_cap_hits_and_drift(tmp_path):
    d = write_run(tmp_path, "x", transport="dblp", cap_hit_in_burst=True, nacks_in_burst=3)
    m = tables.run_metrics(load_runs([d])).iloc[0]
    assert m.nacks == 3 * 2 * N_BURST  # summed over 2 ranks
    assert m.cap_hits == N_BURST and m.cap_hit_frac == pytest.approx(N_BURST / 59)
    assert m.drift_max == pytest.approx(0.001)


def test_time_to_accuracy_unreached_is_nan(tmp_path):
    d = write_run(tmp_path, "x", transport="dblp", final_acc=0.5)
    m = tables.run_metrics(load_runs([d]), target_acc=0.9).iloc[0]
    assert m.tta_s != m.tta_s  # NaN


def test_variants_get_labels_and_repeats_from_seeds(tmp_path):
    d = [
        write_run(tmp_path, "t5", transport="tcp", seed=3, spec={"tcp_rto_min_ms": 5.0}),
        write_run(tmp_path, "t200", transport="tcp", seed=3),
        write_run(tmp_path, "of", transport="optireduce", spec={"optireduce_mode": "fixed"}),
        write_run(tmp_path, "dp", transport="dblp", seed=7, spec={"phase": "off"}),
        write_run(tmp_path, "dp2", transport="dblp", seed=8, spec={"phase": "off"}),
    ]
    runs = load_runs(d).runs.set_index("run_id")
    assert runs.loc["t5", "label"] == "tcp-rto5ms" and runs.loc["t200", "label"] == "tcp"
    assert runs.loc["of", "label"] == "optireduce-fixed"
    assert runs.loc["dp", "label"] == "dblp-phase-off"
    assert (runs.loc["dp", "repeat"], runs.loc["dp2", "repeat"]) == (0, 1)


def test_group_mixing_specs_is_named(tmp_path):
    d = [
        write_run(tmp_path, "a", transport="dblp", seed=0, spec={"bw": 100.0}),
        write_run(tmp_path, "b", transport="dblp", seed=1, spec={"bw": 50.0}),
        write_run(tmp_path, "c", transport="tcp", seed=0, spec={"bw": 100.0}),
        write_run(tmp_path, "e", transport="tcp", seed=1, spec={"bw": 100.0}),
    ]
    assert mixed_specs(load_runs(d)) == ["train/dblp/heavy: runs differ in bw"]


def test_summary_has_exactly_the_orchestrator_keys(tmp_path):
    d = write_run(tmp_path, "x", transport="dblp", burst_ms=60.0)
    s = tables.summary(d)
    assert list(s) == [
        "p50_ms",
        "p50_ms_rule",
        "p99_ms",
        "p99_ms_rule",
        "p99_in_burst_ms",
        "p99_in_burst_ms_rule",
        "p50_no_burst_ms",
        "p50_no_burst_ms_rule",
        "delivered_loss_mean",
        "bursts",
        "comm_fraction",
        "final_acc",
    ]
    assert s["p50_ms"] == 20.0 and s["p50_no_burst_ms"] == 20.0
    assert s["p50_ms_rule"] == "p50 (n=59)"
    # too few samples for a p99: the number is the max, and the rule says so
    assert s["p99_ms"] == 60.0 and s["p99_ms_rule"] == "max (n=59)"
    assert s["p99_in_burst_ms"] == 60.0 and s["p99_in_burst_ms_rule"] == "max (n=10)"
    assert all(isinstance(v, int | float) for k, v in s.items() if not k.endswith("_rule"))
    assert s["bursts"] == 1 and s["final_acc"] == pytest.approx(0.9)
    assert s["delivered_loss_mean"] == pytest.approx(0.05 * N_BURST / 59, rel=1e-3)
    json.dumps(s)


def test_summary_of_allreduce_run_without_bursts(tmp_path):
    d = write_run(tmp_path, "x", workload="allreduce", preset="none", burst_rounds=())
    s = tables.summary(d)
    assert s["final_acc"] is None and s["p99_in_burst_ms"] is None and s["bursts"] == 0


def test_analysis_imports_no_torch_mininet_testbed_or_workloads():
    code = (
        "import sys\n"
        "import analysis.load, analysis.windows, analysis.stats, analysis.tables\n"
        "import analysis.figures, analysis.report\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'mininet', 'testbed', 'workloads')]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_event_table_pairs_the_hit_rounds_by_event(tmp_path):
    # same seed and schedule: the baseline's hit rounds are 300 ms, dblp's 60 ms, calm 20 ms
    dirs = [
        write_run(tmp_path, "o", transport="optireduce", burst_ms=300.0),
        write_run(tmp_path, "d", transport="dblp", burst_ms=60.0),
    ]
    runs = load_runs(dirs)
    rl = tables.round_level(runs)
    hits = tables.event_rounds(rl, runs.bursts)
    assert not hits.empty and set(hits["run_id"]) == {"o", "d"}
    assert hits.groupby("run_id")["latency_ms"].max().to_dict() == {"o": 300.0, "d": 60.0}
    ev = tables.event_table(rl, runs.bursts)
    (row,) = ev[(ev["label"] == "dblp") & (ev["baseline"] == "optireduce")].to_dict("records")
    assert row["events"] == len(hits[hits["run_id"] == "d"])
    assert row["event_ratio_max"] == pytest.approx(5.0)
    assert row["event_ratio_median"] <= row["event_ratio_p90"] <= row["event_ratio_max"]
    assert row["calm_ratio"] == pytest.approx(1.0)


def test_sham_shift_pairs_sham_and_none_runs_by_seed(tmp_path):
    dirs = [
        write_run(tmp_path, "n0", transport="tcp", preset="none", seed=0, burst_rounds=()),
        write_run(tmp_path, "s0", transport="tcp", preset="sham", seed=0, base_ms=23.0),
        # a sham run whose seed has no none run: left out, or the shift would be 1.5x
        write_run(tmp_path, "s1", transport="tcp", preset="sham", seed=1, base_ms=30.0),
        write_run(tmp_path, "d0", transport="dblp", preset="none", seed=0, burst_rounds=()),
    ]
    (row,) = tables.build_tables(load_runs(dirs))["sham_shift"].itertuples(index=False)
    assert (row.workload, row.label, row.seeds) == ("train", "tcp", 1)
    assert (row.none_p50_ms, row.sham_p50_ms) == (20.0, 23.0)
    assert row.shift == pytest.approx(0.15) and not row.faithful
    calm = [write_run(tmp_path, "x", transport="tcp", preset="none", burst_rounds=())]
    assert tables.build_tables(load_runs(calm))["sham_shift"].empty


def _with_eval_time(d, after_step: int, seconds: float):
    """Make the evaluation after step `after_step` take `seconds`: it and everything later
    moves by that much, as when the worker evaluates between steps."""
    from analysis.schema import read_table, write_table

    s, e, r = (read_table(d, t) for t in ("steps", "evals", "rounds"))
    s.loc[s["step"] > after_step, "t_start_s"] += seconds
    e.loc[e["step"] >= after_step, "t_s"] += seconds
    r.loc[r["round"] > after_step, ["t_start_s", "t_end_s"]] += seconds
    for name, df in (("steps", s), ("evals", e), ("rounds", r)):
        write_table(d, name, df)


def test_training_time_is_compute_plus_communication_and_evaluation_apart(tmp_path):
    d = write_run(tmp_path, "x", transport="dblp", burst_ms=60.0)
    _with_eval_time(d, 30, 2.0)
    m = tables.run_metrics(load_runs([d]), target_acc=0.5).iloc[0]
    t = expected_train_s(60, 20.0, 60.0, N_BURST)
    assert m.train_s == pytest.approx(t)  # the 2 s evaluation is not training time
    assert m.eval_s == pytest.approx(2.0) and m.span_s == pytest.approx(t + 2.0)
    # the target 0.5 is first reached at step 40's evaluation: the compute before it
    assert m.tta_s == pytest.approx(0.010 * 41 + 5.0 + 0.020 * (40 - N_BURST) + 0.060 * N_BURST)


def test_target_is_ninety_percent_of_the_exact_controls_accuracy(tmp_path):
    dirs = [
        write_run(tmp_path, f"{t}-{rep}", transport=t, seed=rep, final_acc=acc)
        for rep in range(2)
        for t, acc in (("reliable", 0.8 + 0.1 * rep), ("tcp", 0.99), ("dblp", 0.7))
    ]
    dirs.append(write_run(tmp_path, "calm", transport="dblp", preset="none", final_acc=0.6))
    t = tables.build_tables(load_runs(dirs))
    tr = t["training"].set_index(["label", "preset"])
    # the control is `reliable` (exact, in no comparison), not tcp (exact, a design baseline)
    assert tr.loc[("dblp", "heavy"), "target_of"] == "reliable"
    assert tr.loc[("dblp", "heavy"), "target_acc"] == pytest.approx(0.9 * 0.85)
    # another recipe (here: another preset) without a control has no target
    assert tr.loc[("dblp", "none"), "target_acc"] != tr.loc[("dblp", "none"), "target_acc"]
    assert tr.loc[("dblp", "heavy"), "tta_reached"] == 0  # 0.7 < 0.765


def test_event_ratios_carry_seed_intervals_and_a_calm_null(three_way):
    ok = three_way.aggregated()
    ev = tables.event_table(tables.round_level(ok), ok.bursts)
    e = _row(ev, label="dblp", baseline="optireduce")
    assert e.event_ratio_max == pytest.approx(5.0)
    assert e.event_ratio_max_lo == pytest.approx(5.0) and e.event_ratio_max_hi == pytest.approx(5.0)
    # calm rounds take 20 ms under both: every quantile's null is 1x, from every calm pair
    assert e.null_rounds == 3 * (59 - N_BURST)
    assert (e.null_max_p95, e.null_p90_p95, e.null_median_p95) == pytest.approx((1.0, 1.0, 1.0))
