"""report.md and tables/*.csv as a reader meets them: one screen of headline, one validity
block, numbers for people in the markdown and numbers for machines in the CSVs."""

import re

import pandas as pd
import pytest
from synthetic_runs import expected_train_s, write_bench_like, write_run

from analysis.report import fmt_num, fmt_pct, write_report

#: CSV columns that hold text; every other column of every table must read back numeric.
TEXT_COLUMNS = {
    "comparison",
    "run_id",
    "workload",
    "label",
    "preset",
    "transport",
    "baseline",
    "baseline_transport",
    "status",
    "reason",
    "warnings",
    "rejections",
    "validity",
    "probe",
    "mode",
    "eps_policy",
    "exact_baseline",
    "target_of",
    "system",
    "control",
}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A 23-run sweep shaped like the committed bench; every run unfaithful and oversubscribed,
    one rejecting datagrams."""
    root = tmp_path_factory.mktemp("bench")
    dirs = write_bench_like(
        root / "runs", overrides={"al-dblp-heavy-r0": {"rejections": {"source": 3, "nonfinite": 1}}}
    )
    return write_report(dirs, root / "report")


def test_every_csv_is_numeric_outside_its_text_columns(bench):
    csvs = sorted((bench.path.parent / "tables").glob("*.csv"))
    assert {p.stem for p in csvs} >= {"latency", "comparisons", "paper", "training", "loss"}
    for p in csvs:
        df = pd.read_csv(p)
        if df.empty:
            continue  # a header alone carries no dtype (e.g. probes of a sweep without probes)
        for c in df.columns:
            if c in TEXT_COLUMNS or c.endswith("_rule"):
                continue
            assert pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c]), (
                f"{p.name}:{c} is {df[c].dtype}: {df[c].head(3).tolist()}"
            )
    lat = pd.read_csv(bench.path.parent / "tables" / "latency.csv")
    assert (lat["p99_all_rule"] == "max (n=59)").any()  # the rule, beside a number
    assert lat.loc[lat["rounds_in"] == 0, "p50_in_ms"].isna().all()  # NaN, not "n/a (n=0)"


def test_headline_fits_one_screen_with_one_validity_block(bench):
    text = bench.path.read_text()
    top = text.split("## Round latency")[0]
    # the design comparison's headline has a row per baseline (optireduce and tcp labels):
    # 8 rows here, HEADLINE_ROWS at most
    assert len(top.splitlines()) <= 30
    assert top.count("> **Validity") == 1
    assert "23 of 23 runs UNFAITHFUL" in top and "23 of 23 runs oversubscribed" in top
    assert "4 datagrams rejected" in top and "source 3, nonfinite 1" in top
    assert "[Validity](#validity)" in top
    assert len(bench.warnings) <= 4  # the terminal prints these: kinds, not runs
    # details at the end, one row per run
    assert text.index("## Validity") > text.index("## Figures")
    assert text.count("| al-dblp-heavy-r0 |") == 1


def test_numbers_are_formatted_for_people(bench):
    text = bench.path.read_text()
    assert not re.search(r"\d\.\d+e[+-]\d", text), "scientific notation"
    assert not re.search(r"\d\.\d{5,}", text), "raw float digits"
    assert "in-burst mean ratio (×)" in text and "p50 in burst (ms)" in text
    assert "speedup" not in text  # the ratio of means is not called the paper's statistic
    assert fmt_num(12270.5) == "12,270" and fmt_num(0.9721448421478271) == "0.972"
    assert fmt_pct(3.87e-06) == "<0.1%" and fmt_pct(0.1298) == "13.0%"


def test_comparisons_grouped_by_baseline_optireduce_first(bench):
    text = bench.path.read_text()
    heads = re.findall(r"^### allreduce: each transport vs `([^`]+)`", text, flags=re.M)
    assert heads[:2] == ["optireduce", "optireduce-fixed"] and "tcp" in heads
    assert "vs `tcp`" not in text.split("## Round latency")[0]  # the headline is optireduce's


def test_report_over_an_interrupted_repeat_beside_an_ok_one(tmp_path):
    """Issue 9: one interrupted repeat beside an ok one must not pull the training time and
    the final accuracy down; the report aggregates the ok run and lists the other apart."""
    common = dict(transport="dblp", burst_ms=60.0)
    dirs = [
        write_run(tmp_path, "ok", seed=0, final_acc=0.972, **common),
        write_run(
            tmp_path,
            "cut",
            seed=1,
            n_rounds=25,
            final_acc=0.5,
            status="interrupted",
            reason="received SIGTERM",
            **common,
        ),
        write_run(tmp_path, "opt", transport="optireduce", seed=0, burst_ms=300.0),
    ]
    # no exact control ran: the target is given (95% of the lower group mean, 0.855)
    rep = write_report(dirs, tmp_path / "rep", target_acc=0.855)
    tr = rep.tables["training"].set_index("label").loc["dblp"]
    assert tr.runs == 1 and tr.final_acc == pytest.approx(0.972)
    assert tr.train_s == pytest.approx(expected_train_s(60, 20.0, 60.0, 10))
    text = rep.path.read_text()
    top = text.split("## Headline")[0]
    assert "1 of 3 runs INTERRUPTED, not aggregated" in top and "`cut`: received SIGTERM" in top
    left = text.split("## Runs not aggregated")[1].split("## Validity")[0]
    assert "| cut | train | dblp | heavy | 1 | interrupted | received SIGTERM |" in left
    assert "left out: interrupted 1" in text
    assert "| dblp | heavy | 1 | 7.18 | 0 | 7.18 | 1 | 0.972 |" in text  # the ok run's, alone
    # figures draw the ok runs only
    assert rep.figures and "cut" not in " ".join(str(p) for p in rep.figures.values())


def test_a_single_run_with_rejections_is_warned(tmp_path):
    d = write_run(tmp_path, "one", transport="dblp", rejections={"token": 2})
    rep = write_report([d], d)
    assert rep.warnings == (
        "2 datagrams rejected by the transport (spoofed, foreign or non-finite) in 1 of 1 "
        "runs: `one` 2 (token 2)",
    )
    assert "rejected datagrams 1/1" in rep.path.read_text()


def test_a_report_of_only_unfinished_runs_shows_their_partial_data_apart(tmp_path):
    d = write_run(
        tmp_path, "one", workload="allreduce", status="interrupted", reason="received SIGINT",
        n_rounds=30,
    )  # fmt: skip
    rep = write_report([d], d)
    text = rep.path.read_text()
    assert "No run finished with status ok, so nothing is aggregated" in text
    assert rep.tables["latency"].empty and not rep.figures
    left = text.split("## Runs not aggregated")[1].split("## Validity")[0]
    assert (
        "| one | allreduce | dblp | heavy | 0 | interrupted | received SIGINT | 29 | 30 |" in left
    )


def test_a_timeout_sweep_keeps_the_headline_to_the_adaptive_baseline(tmp_path):
    """Nine optireduce baselines make nine paper rows: the first screen keeps the row vs
    `optireduce` and links the section that holds all nine."""
    dirs = [write_run(tmp_path, "d", transport="dblp", burst_ms=60.0)]
    dirs.append(write_run(tmp_path, "o", transport="optireduce", burst_ms=300.0))
    for x in (1.5, 2, 3, 4, 5, 6, 7, 8):
        dirs.append(
            write_run(tmp_path, f"o{x:g}", transport="optireduce", burst_ms=20.0 * x,
                      spec={"label": f"optireduce-t{x:g}x", "optireduce_mode": "fixed"})
        )  # fmt: skip
    rep = write_report(dirs, tmp_path / "rep")
    assert len(rep.tables["paper"]) == 9
    assert list(rep.headline["vs"]) == ["optireduce"]
    text = rep.path.read_text()
    top = text.split("## Round latency")[0]
    section = "## The design comparison: the system vs the design card's baselines"
    assert "(#the-design-comparison-the-system-vs-the-design-cards-baselines)" in top
    assert "no runs of the paper's baseline" in top
    below = text.split(section)[1].split("\n## ")[0]
    assert below.count("| heavy | dblp | optireduce-t") == 8


def test_validity_shows_the_sham_control_per_transport(bench):
    validity = bench.path.read_text().split("## Validity")[1]
    sham = validity.split("### The sham control: the bursts' CPU cost alone")[1]
    assert "A shift beyond ±10%" in sham
    assert [ln.split(" | ")[1] for ln in sham.splitlines() if ln.startswith("| allreduce")] == [
        "dblp", "optireduce", "tcp",
    ]  # fmt: skip
    assert set(bench.tables["sham_shift"]["seeds"]) == {1}


def test_the_same_runs_give_the_same_report_bytes(tmp_path):
    """A committed report must regenerate byte for byte: no clock, and run folders named
    relative to the report, not by the checkout's absolute path."""
    dirs = write_bench_like(tmp_path / "runs")
    first = write_report(dirs, tmp_path).path.read_bytes()
    tables = {p.name: p.read_bytes() for p in (tmp_path / "tables").glob("*.csv")}
    again = write_report(dirs, tmp_path).path.read_bytes()
    assert again == first
    assert tables == {p.name: p.read_bytes() for p in (tmp_path / "tables").glob("*.csv")}
    sources = first.decode().split("## Sources")[1]
    assert f"`runs/{dirs[0].name}`" in sources and str(tmp_path) not in sources


def test_runs_judged_by_the_earlier_verdict_are_named_as_such():
    """A run keeps the verdict of the code that made it; the validity section says which rule
    judged runs from before the calibration reference (no p95 lateness in their run.json)."""
    from types import SimpleNamespace

    import pandas as pd

    from analysis.report.validity import _earlier_verdict

    def runs(*earlier):
        return SimpleNamespace(runs=pd.DataFrame({"earlier_verdict": list(earlier)}))

    assert _earlier_verdict(runs(False, False)) == ""
    text = _earlier_verdict(runs(True, False, True))
    assert "2 of 3 runs were judged by the earlier verdict" in text and "1.5x" in text
