"""The phase ablation: dblp's ε policies on training runs beside the exact transports, and the
sentence that says whether phase-aware ε bought pinned ε = 0.2's speed at exact accuracy."""

import pytest
from synthetic_runs import write_run

from analysis import tables
from analysis.load import load_runs
from analysis.report import phase_sentences, write_report

SEEDS = (0, 1, 2)
#: label -> (transport, spec, in-burst round ms, final accuracy per seed)
TRAINING = {
    "dblp": ("dblp", {}, 50.0, (0.90, 0.90, 0.90)),
    "dblp-eps0.05": ("dblp", {"phase": "off", "epsilon": 0.05}, 70.0, (0.90, 0.90, 0.90)),
    "dblp-eps0.2": ("dblp", {"phase": "off", "epsilon": 0.2}, 60.0, (0.80, 0.80, 0.80)),
    "reliable": ("reliable", {}, 200.0, (0.88, 0.90, 0.92)),
    "tcp": ("tcp", {}, 900.0, (0.90, 0.90, 0.90)),
    "optireduce": ("optireduce", {}, 300.0, (0.85, 0.85, 0.85)),
}


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablation")
    out = []
    for label, (transport, spec, burst_ms, accs) in TRAINING.items():
        for seed, acc in zip(SEEDS, accs, strict=True):
            out.append(
                write_run(root, f"{label}-{seed}", transport=transport, seed=seed,
                          burst_ms=burst_ms, final_acc=acc, spec={**spec, "label": label})
            )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def ablation(dirs):
    return tables.build_tables(load_runs(dirs))["phase_ablation"].set_index("label")


def test_each_label_says_its_epsilon_policy(ablation):
    assert list(ablation.index) == [
        "dblp", "dblp-eps0.05", "dblp-eps0.2", "reliable", "tcp", "optireduce",
    ]  # fmt: skip
    assert ablation.loc["dblp", "eps_policy"] == "phase-aware"
    assert ablation.loc["dblp-eps0.2", "eps_policy"] == "ε pinned at 0.2"
    assert ablation.loc["dblp-eps0.05", "pinned_eps"] == 0.05
    assert ablation.loc["tcp", "eps_policy"] == "exact (no ε)"
    assert ablation.loc["optireduce", "eps_policy"] == "timeout (no ε)"
    # synthetic rounds 1-4 of 59 are labelled critical; every round carries ε 0.05
    assert ablation.loc["dblp", "critical_share"] == pytest.approx(4 / 59)
    assert ablation.loc["dblp", "eps_mean"] == pytest.approx(0.05)
    assert ablation.loc["dblp", "loss_mean"] == pytest.approx(0.05 * 10 / 59)


def test_accuracy_against_reliable_and_time_against_pinned_02(ablation):
    d = ablation.loc["dblp"]
    assert d.exact_baseline == "reliable"
    assert d.acc_delta == pytest.approx(0.0)  # paired: 0.90 - (0.88, 0.90, 0.92)
    assert d.acc_delta_lo < 0 < d.acc_delta_hi
    assert ablation.loc["dblp-eps0.2", "acc_delta"] == pytest.approx(-0.10)
    t = ablation.loc[["dblp", "dblp-eps0.2"], "train_s"]
    assert d.time_vs_fast == pytest.approx(t["dblp"] / t["dblp-eps0.2"]) and d.time_vs_fast < 1
    assert (
        ablation.loc["dblp-eps0.2", "time_vs_fast"] != ablation.loc["dblp-eps0.2", "time_vs_fast"]
    )
    r = ablation.loc["reliable"]
    assert r.final_acc == pytest.approx(0.90) and r.final_acc_lo < 0.88 and r.final_acc_hi > 0.92


def test_the_sentence_says_what_the_numbers_say(ablation):
    (said,) = phase_sentences(ablation.reset_index())
    assert said.startswith("train, preset heavy: phase-aware `dblp` beat the training time of ")
    assert "`dblp-eps0.2` (ε pinned at 0.2)" in said
    assert "final accuracy 0.900 is within `reliable`'s 95% CI" in said
    assert "within `tcp`'s 95% CI [0.900, 0.900]" in said
    slower = ablation.reset_index().assign(time_vs_fast_lo=1.05, time_vs_fast_hi=1.2)
    assert "`dblp` did not reach the training time" in phase_sentences(slower)[0]
    worse = ablation.reset_index()
    worse.loc[worse["label"] == "dblp", "final_acc"] = 0.5
    assert "0.500 is below `reliable`'s 95% CI" in phase_sentences(worse)[0]


def test_report_section_only_with_training_runs(dirs, tmp_path):
    text = write_report(dirs, tmp_path / "with").path.read_text()
    section = text.split("## Phase ablation: the ε policy, training time and accuracy")[1]
    section = section.split("\n## ")[0]
    assert "| heavy | dblp-eps0.2 | ε pinned at 0.2 | 3 |" in section
    assert "exact (no ε)" in section and "timeout (no ε)" in section
    assert "phase-aware `dblp` beat" in section
    ar = [
        write_run(tmp_path / "ar", t, transport=t, workload="allreduce")
        for t in ("dblp", "reliable")
    ]
    rep = write_report(ar, tmp_path / "without")
    assert rep.tables["phase_ablation"].empty and "Phase ablation" not in rep.path.read_text()


def test_the_pinned_epsilon_as_played_comes_from_run_json(tmp_path):
    """Phase off without an ε pins the stable-phase ε: the run.json's, not a guess."""
    import json

    d = write_run(tmp_path, "off", transport="dblp", spec={"phase": "off"})
    info = json.loads((d / "run.json").read_text())
    info["transport_params"] = {"phase": {"enabled": False, "pinned_epsilon": None,
                                          "eps_stable": 0.3}}  # fmt: skip
    (d / "run.json").write_text(json.dumps(info))
    row = tables.run_params(load_runs([d])).iloc[0]
    assert (row.eps_policy, row.pinned_eps) == ("ε pinned at 0.3", 0.3)
