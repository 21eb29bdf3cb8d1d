"""Every figure keeps all its text on the canvas: titles, legends, labels and tick labels.

Each figure is drawn from synthetic runs shaped like the committed bench (tests/unit/
synthetic_runs.py), caught at the save seam, drawn, and every visible text artist's window
extent is compared with the canvas."""

import pytest
from matplotlib.text import Text
from synthetic_runs import write_bench_like, write_run

from analysis import figures, tables
from analysis.load import load_runs

#: Slack in pixels: anti-aliasing may spill a text's box by a pixel.
SLACK_PX = 1.0


def _drawn_tick_labels(axis) -> list:
    """The tick labels axis draws: those of the ticks inside its view (the rest exist, unused)."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    inside = [t for t in ticks if t.get_loc() is not None and lo <= t.get_loc() <= hi]
    return [lab for t in inside for lab in (t.label1, t.label2)]


def _texts(fig) -> list:
    """Every text artist of fig that is drawn: titles, labels, legends, annotations, and the
    tick labels of the ticks inside each axis' view."""
    tick_labels = set()
    drawn = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for t in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels |= {id(t.label1), id(t.label2)}
            drawn += _drawn_tick_labels(axis)
    others = [a for a in fig.findobj(lambda a: isinstance(a, Text)) if id(a) not in tick_labels]
    return others + drawn


def _clipped(fig) -> list[str]:
    """The visible, non-empty texts of fig whose extent leaves the canvas, as descriptions."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    out = []
    for t in _texts(fig):
        if not t.get_visible() or not str(t.get_text()).strip():
            continue
        box = t.get_window_extent(renderer)
        if (
            box.x0 < -SLACK_PX
            or box.y0 < -SLACK_PX
            or box.x1 > width + SLACK_PX
            or (box.y1 > height + SLACK_PX)
        ):
            out.append(f"{t.get_text()!r} at {box.bounds} on a {width}x{height} canvas")
    return out


def _draw_all(runs, out) -> dict[str, list[str]]:
    """{figure name: its clipped texts} for every figure make_figures draws from runs."""
    found: dict[str, list[str]] = {}

    def catch(fig, path):
        found[path.stem] = _clipped(fig)
        return figures.write_png(fig, path)

    saved = figures._save
    figures._save = catch
    try:
        figures.make_figures(runs.aggregated(), tables.build_tables(runs), out)
    finally:
        figures._save = saved
    return found


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """Every figure of a bench-shaped report: two workloads, several presets."""
    root = tmp_path_factory.mktemp("bench")
    return _draw_all(load_runs(write_bench_like(root / "runs", repeats=2)), root / "fig")


@pytest.fixture(scope="module")
def one_preset(tmp_path_factory):
    """Every figure of a reproduction-shaped report: one bursty preset, so one narrow column
    of timeline panels under a long title and a three-item legend."""
    root = tmp_path_factory.mktemp("one")
    dirs = [
        write_run(root, f"{t}-{rep}", transport=t, seed=rep, preset="heavy", burst_ms=ms)
        for rep in range(2)
        for t, ms in (("dblp", 60.0), ("optireduce", 300.0), ("tcp", 900.0), ("reliable", 400.0))
    ]
    return _draw_all(load_runs(dirs), root / "fig")


def test_every_figure_is_drawn(bench, one_preset):
    names = {"latency_cdf", "latency_timeline", "accuracy_vs_time", "headline_ratios"}
    assert names <= set(bench) and names <= set(one_preset)


@pytest.mark.parametrize("sweep", ["bench", "one_preset"])
@pytest.mark.parametrize(
    "name",
    ["latency_cdf", "latency_timeline", "accuracy_vs_time", "epsilon_loss", "headline_ratios"],
)
def test_no_text_leaves_the_canvas(request, sweep, name):
    drawn = request.getfixturevalue(sweep)
    assert drawn.get(name, []) == []
