import pytest
from synthetic_runs import write_run

from analysis import figures, tables
from analysis.load import load_runs
from analysis.windows import applied_windows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    dirs = []
    for preset in ("light", "heavy"):
        for rep in range(2):
            for transport, burst_ms in (("optireduce", 300.0), ("dblp", 60.0), ("tcp", 900.0)):
                dirs.append(
                    write_run(
                        root,
                        f"{transport}-{preset}-{rep}",
                        transport=transport,
                        preset=preset,
                        seed=rep,
                        burst_ms=burst_ms + 10 * rep,
                    )
                )
    return load_runs(dirs)


def _is_png(path):
    data = path.read_bytes()
    return data[:8] == PNG_MAGIC and len(data) > 5000


def test_each_figure_is_a_nonempty_png(runs, tmp_path):
    rl = tables.round_level(runs)
    comp = tables.comparisons(tables.run_metrics(runs))
    made = [
        figures.latency_cdf(rl, tmp_path / "cdf.png"),
        figures.latency_timeline(rl, applied_windows(runs.bursts), tmp_path / "time.png"),
        figures.accuracy_vs_time(runs, tmp_path / "acc.png"),
        figures.epsilon_and_loss(rl, tmp_path / "eps.png"),
        figures.headline_bars(comp, tmp_path / "bars.png"),
    ]
    for p in made:
        assert _is_png(p), p


def test_make_figures_draws_only_what_the_data_supports(tmp_path):
    d = write_run(tmp_path / "runs", "ar", workload="allreduce", transport="dblp")
    runs = load_runs([d])
    made = figures.make_figures(runs, tables.build_tables(runs), tmp_path / "fig")
    assert set(made) == {"latency_cdf", "latency_timeline", "epsilon_loss"}
    assert all(_is_png(p) for p in made.values())


def test_headline_bars_with_two_workloads(tmp_path):
    root = tmp_path / "runs"
    dirs = [
        write_run(root, f"{w}-{t}", workload=w, transport=t, burst_ms=ms)
        for w in ("train", "allreduce")
        for t, ms in (("optireduce", 300.0), ("dblp", 60.0))
    ]
    runs = load_runs(dirs)
    made = figures.make_figures(runs, tables.build_tables(runs), tmp_path / "fig")
    assert _is_png(made["headline_ratios"])
