import pytest
from matplotlib.container import ErrorbarContainer
from synthetic_runs import write_run
from test_timeout_axis import write_timeout_sweep

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
    paper = tables.build_tables(runs)["paper"]
    made = [
        figures.latency_cdf(rl, tmp_path / "cdf.png"),
        figures.latency_timeline(rl, applied_windows(runs.bursts), tmp_path / "time.png"),
        figures.accuracy_vs_time(runs, tmp_path / "acc.png"),
        figures.epsilon_and_loss(rl, tmp_path / "eps.png"),
        figures.headline_bars(paper, tmp_path / "bars.png"),
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


@pytest.fixture
def drawn(monkeypatch):
    """The figures as drawn, before they are saved and closed: {file name: Figure}."""
    got = {}
    real = figures._save

    def keep(fig, path):
        got[path.name] = fig
        fig.canvas.draw()  # lay out, so texts and legends exist as printed
        return real(fig, path)

    monkeypatch.setattr(figures, "_save", keep)
    return got


def _texts(fig):
    out = [fig.get_suptitle()] + [t.get_text() for t in fig.texts]
    for sub in fig.subfigs:
        out.append(sub.get_suptitle())
    for ax in fig.get_axes():
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.texts]
    return " | ".join(out)


def test_figures_a_paper_would_print(tmp_path, drawn):
    """One repeat of two workloads and three transports: panels per workload, legends
    outside the axes, no ε for transports without one, every run on the timeline, no CI
    claimed from one repeat, and sparse accuracy curves said to be sparse."""
    root = tmp_path / "runs"
    dirs = [
        write_run(root, f"{w}-{t}", workload=w, transport=t, burst_ms=ms,
                  epsilon=0.2 if t == "dblp" else 0.0, eval_every=30)
        for w in ("train", "allreduce")
        for t, ms in (("optireduce", 300.0), ("dblp", 60.0), ("tcp", 900.0))
    ]  # fmt: skip
    runs = load_runs(dirs)
    figures.make_figures(runs, tables.build_tables(runs), tmp_path / "fig")
    for name, fig in drawn.items():
        for ax in fig.get_axes():
            assert ax.get_legend() is None, f"{name}: a legend inside the axes"
        assert fig.legends, f"{name}: no legend"
    cdf = drawn["latency_cdf.png"]
    assert [ax.get_title().split(":")[0] for ax in cdf.get_axes()] == ["allreduce", "train"]
    for ax in cdf.get_axes():  # plain tick labels on the log axis, not 2×10²
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert labels and not any("10^" in t or "times" in t for t in labels), labels
    eps = drawn["epsilon_loss.png"]
    eps_panels = [ax for ax in eps.get_axes() if ax.get_title().endswith("ε per round")
                  or "ε per round\n" in ax.get_title()]  # fmt: skip
    assert len(eps_panels) == 2 and all(len(ax.get_lines()) == 1 for ax in eps_panels)  # dblp
    assert "not drawn: optireduce, tcp" in _texts(eps)
    timeline = drawn["latency_timeline.png"]
    assert "all 6 runs" in timeline.get_suptitle()
    assert any("applied burst window" in t.get_text() for t in timeline.legends[0].get_texts())
    bars = drawn["headline_ratios.png"]
    assert "no confidence interval" in bars.get_suptitle() and "95%" not in bars.get_suptitle()
    assert not [c for ax in bars.get_axes() for c in ax.containers
                if isinstance(c, ErrorbarContainer)]  # fmt: skip
    assert "n=1" in _texts(bars)
    acc = drawn["accuracy_vs_time.png"]
    assert "only 2 evaluations per run" in _texts(acc)
    legend = [t.get_text() for t in acc.legends[0].get_texts()]
    assert "burst windows, first repeat (heavy)" in legend
    (ax,) = acc.get_axes()
    assert len(ax.patches) == 1  # one event, the same under every transport: one band


def test_headline_bars_claim_a_ci_only_with_repeats(tmp_path, drawn):
    root = tmp_path / "runs"
    dirs = [
        write_run(root, f"{t}-{rep}", transport=t, seed=rep, burst_ms=ms + 10 * rep)
        for rep in range(3)
        for t, ms in (("optireduce", 300.0), ("dblp", 60.0))
    ]
    runs = load_runs(dirs)
    figures.make_figures(runs, tables.build_tables(runs), tmp_path / "fig")
    bars = drawn["headline_ratios.png"]
    assert "95% CI over 3 repeats" in bars.get_suptitle()
    assert [c for ax in bars.get_axes() for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert "n=3" in _texts(bars)


def test_epsilon_figure_with_nothing_to_draw_has_no_legend_and_still_saves(tmp_path):
    # tcp and reliable on a calm network: no ε, no loss, nothing for a legend to name
    root = tmp_path / "runs"
    dirs = [
        write_run(root, t, transport=t, preset="none", loss_in=0.0, burst_rounds=())
        for t in ("tcp", "reliable")
    ]
    rl = tables.round_level(load_runs(dirs))
    assert _is_png(figures.epsilon_and_loss(rl, tmp_path / "eps.png"))


def test_timeout_figure_marks_the_adaptive_point_and_the_published_line(tmp_path, drawn):
    runs = load_runs(write_timeout_sweep(tmp_path / "runs", seeds=(0,)))
    figures.make_figures(runs, tables.build_tables(runs), tmp_path / "fig")
    fig = drawn["timeout_axis.png"]
    (ax,) = fig.get_axes()
    assert ax.get_legend() is None and fig.legends  # the legend is below, not on the data
    assert any(t.get_text() == "published 5.88×" for t in ax.texts)
    ys = {round(line.get_ydata()[0], 2) for line in ax.get_lines() if len(line.get_ydata()) == 2}
    assert {5.88, 1.0} <= ys  # the published max and the y = 1 reference
    diamonds = [line for line in ax.get_lines() if line.get_marker() == "D"]
    assert [list(line.get_xdata()) for line in diamonds] == [[pytest.approx(2.0)]] * 3
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ticks == ["1.5×", "2×", "3×", "4×", "6×", "8×"]
    assert "calm-round p50" in ax.get_xlabel() and "baseline / system" in ax.get_ylabel()


def test_label_colours_come_from_traits_not_names():
    """A colour family per completion kind, taken in label order: the reproduction's many
    labels stay apart, none takes the burst shading's, and a renamed transport keeps its
    family."""
    from matplotlib.colors import to_hex

    from analysis.figures import BURST_COLOR, KIND_COLORS, label_colors

    kinds = {"tcp": "exact", "tcp-rto5ms": "exact", "reliable": "exact"}
    kinds |= {lab: "bounded-loss" for lab in ("dblp", "dblp-eps0.05", "dblp-eps0.2", "mlt")}
    kinds |= {f"optireduce-t{x}x": "bounded-time" for x in (1.5, 2, 3, 4, 6, 8)}
    kinds |= {"optireduce": "bounded-time", "new-policy": "nonsense"}
    colors = label_colors(kinds)
    hexes = [to_hex(c) for c in colors.values()]
    assert len(set(hexes)) == len(hexes)  # no two labels share a colour
    assert to_hex(BURST_COLOR) not in hexes  # nor one with the burst shading
    assert colors["dblp"] == KIND_COLORS["bounded-loss"][0]  # first of its kind, by label
    assert colors["new-policy"] == KIND_COLORS[""][0]  # an unknown kind: the rest's colours
    assert label_colors({"renamed": "exact"}) == {"renamed": KIND_COLORS["exact"][0]}
