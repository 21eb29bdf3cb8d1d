import pandas as pd
from synthetic_runs import write_run
from typer.testing import CliRunner

from testbed.cli import app

runner = CliRunner()


def test_single_run_report_goes_into_the_run_folder(tmp_path):
    d = write_run(tmp_path, "one", transport="dblp")
    res = runner.invoke(app, ["report", str(d)])
    assert res.exit_code == 0, res.output
    text = (d / "report.md").read_text()
    assert "Round latency" in text and "WARNING" not in res.output
    for name in ("latency", "comparisons", "training", "loss", "validity", "paper"):
        assert (d / "tables" / f"{name}.csv").exists()
    assert (d / "figures" / "latency_cdf.png").stat().st_size > 0
    assert "latency_cdf.png" in text


def test_sweep_report_headline_and_failed_run_flagged(tmp_path):
    dirs = []
    for rep in range(2):
        dirs.append(write_run(tmp_path, f"o{rep}", transport="optireduce", seed=rep))
        dirs.append(write_run(tmp_path, f"d{rep}", transport="dblp", seed=rep, burst_ms=50.0))
    dirs.append(
        write_run(tmp_path, "bad", transport="tcp", status="failed", reason="rank 2 exited 1")
    )
    dirs.append(write_run(tmp_path, "hungry", transport="tcp", seed=1, unfaithful=True))
    out = tmp_path / "rep"
    res = runner.invoke(app, ["report", *map(str, dirs), "--out", str(out)])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "The design comparison (no runs of the paper's baseline" in said
    assert "FAILED" in said and "UNFAITHFUL" in said
    text = (out / "report.md").read_text()
    top = text.split("## Headline")[0]
    assert "1 of 6 runs FAILED, not aggregated (partial data): `bad`: rank 2 exited 1" in top
    assert "1 of 6 runs UNFAITHFUL" in top and "(`hungry`)" in top
    # its variant is gone from every table (the other tcp run failed): the warning says so
    assert "(--include-unfaithful puts them back); no run left of tcp" in top
    assert "| bad | train | tcp | heavy | 0 | failed | rank 2 exited 1 |" in text
    paper = pd.read_csv(out / "tables" / "paper.csv")
    # tcp's one ok run is unfaithful: left out of the aggregates unless asked for
    assert set(paper["baseline"]) == {"optireduce"}
    again = tmp_path / "rep2"
    res = runner.invoke(
        app, ["report", *map(str, dirs), "--out", str(again), "--include-unfaithful"]
    )
    assert res.exit_code == 0, res.output
    both = pd.read_csv(again / "tables" / "paper.csv")
    assert set(both["baseline"]) == {"optireduce", "tcp"}  # the design's baselines
    assert paper["published_event_ratio_max"].isna().all()  # no paper baseline ran
    row = paper[paper["baseline"] == "optireduce"].iloc[0]
    assert (row["seeds"], row["events"]) == (2, 2)  # paired by seed
    assert (out / "figures" / "headline_ratios.png").exists()


def test_not_a_run_folder_is_an_error(tmp_path):
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "no run.json" in " ".join(res.output.split())


def test_run_json_off_schema_names_the_field(tmp_path):
    import json

    d = write_run(tmp_path, "odd", transport="dblp")
    info = json.loads((d / "run.json").read_text())
    info["status"] = "exploded"
    (d / "run.json").write_text(json.dumps(info))
    res = runner.invoke(app, ["report", str(d)])
    assert res.exit_code == 2
    said = " ".join(res.output.split())  # rich wraps long lines
    assert "run.json does not match RunInfo" in said and "first: status" in said


def test_sweep_folder_reports_its_runs_inside_it(tmp_path):
    sw = tmp_path / "sweep"
    write_run(sw, "o0", transport="optireduce")
    write_run(sw, "d0", transport="dblp", burst_ms=50.0)
    write_run(sw, "d0.prev1", transport="dblp", status="failed")  # a retried attempt
    (sw / "last").symlink_to("d0")
    res = runner.invoke(app, ["report", str(sw)])
    assert res.exit_code == 0, res.output
    text = (sw / "report" / "report.md").read_text()
    assert "# Report: 2 run(s)" in text and "FAILED" not in text


def test_unfaithful_runs_are_listed_not_aggregated_unless_asked(tmp_path):
    """An unfaithful run set dblp's max before: now it is left out and named, and
    --include-unfaithful puts it back."""
    dirs = [
        write_run(tmp_path, "o0", transport="optireduce"),
        write_run(tmp_path, "d0", transport="dblp", burst_ms=50.0),
        write_run(tmp_path, "d1", transport="dblp", seed=1, burst_ms=900.0, unfaithful=True),
    ]

    def dblp(out, *flags):
        res = runner.invoke(app, ["report", *map(str, dirs), "--out", str(out), *flags])
        assert res.exit_code == 0, res.output
        lat = pd.read_csv(out / "tables" / "latency.csv").set_index("label").loc["dblp"]
        validity = pd.read_csv(out / "tables" / "validity.csv").set_index("run_id")
        return lat, bool(validity.loc["d1", "aggregated"]), (out / "report.md").read_text()

    lat, aggregated, text = dblp(tmp_path / "default")
    assert lat["runs"] == 1 and lat["max_all_ms"] < 900 and not aggregated
    assert "2 of 3 aggregated (status ok and faithful)" in text
    assert "left out of every aggregate (--include-unfaithful puts them back)" in text
    left = text.split("## Runs not aggregated")[1].split("## Validity")[0]
    assert "| d1 | train | dblp | heavy | 1 | unfaithful | unfaithful: the emulator's" in left

    lat, aggregated, text = dblp(tmp_path / "all", "--include-unfaithful")
    assert lat["runs"] == 2 and lat["max_all_ms"] >= 900 and aggregated
    assert "3 of 3 aggregated (status ok)" in text and "## Runs not aggregated" not in text
