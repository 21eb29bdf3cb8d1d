"""The report's figures (PNG, Agg backend), drawn to be printed in a paper.

Every figure: its story in the title, units on every axis, legends outside the data (below
the axes), one colour per transport label and one line style per burst preset, the same in
every figure, read from each run's traits and preset role (style.py). Workloads (all-reduce
rounds, training steps) never share an axis. Figures draw the runs they are given; the
report passes the ok runs only (`Runs.aggregated`).

One module per figure (`style` holds what they share), each function taking frames from
`analysis.tables` and a path, returning the path written. `make_figures` draws every figure the
data supports (no evaluations, no accuracy plot) and returns what it wrote, by name.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before any module of the package imports pyplot

from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

from analysis.figures.accuracy import accuracy_vs_time  # noqa: E402
from analysis.figures.epsilon import epsilon_and_loss  # noqa: E402
from analysis.figures.headline import headline_bars  # noqa: E402
from analysis.figures.latency import latency_cdf, latency_timeline  # noqa: E402
from analysis.figures.style import (  # noqa: E402
    BURST_COLOR,
    DPI,
    KIND_COLORS,
    OTHER_STYLES,
    ROLE_STYLES,
    WORKLOAD_X,
    label_colors,
    label_kinds,
    preset_roles,
    preset_styles,
    write_png,
)
from analysis.figures.timeout import TIMEOUT_TICKS, timeout_axis  # noqa: E402
from analysis.load import Runs  # noqa: E402
from analysis.tables.common import round_level  # noqa: E402
from analysis.windows import applied_windows  # noqa: E402

__all__ = [
    "BURST_COLOR",
    "DPI",
    "KIND_COLORS",
    "OTHER_STYLES",
    "ROLE_STYLES",
    "TIMEOUT_TICKS",
    "WORKLOAD_X",
    "accuracy_vs_time",
    "epsilon_and_loss",
    "headline_bars",
    "label_colors",
    "label_kinds",
    "latency_cdf",
    "latency_timeline",
    "make_figures",
    "preset_roles",
    "preset_styles",
    "timeout_axis",
]

#: Where every figure is written (`style.save` calls it): replace it to see the figures drawn.
_save = write_png


def make_figures(runs: Runs, tables: dict[str, pd.DataFrame], out_dir: Path) -> dict[str, Path]:
    """Every figure the data supports, written under out_dir; returns {name: path}."""
    out_dir = Path(out_dir)
    rl = round_level(runs)
    made: dict[str, Path] = {}
    if not rl.empty:
        made["latency_cdf"] = latency_cdf(rl, out_dir / "latency_cdf.png")
        made["latency_timeline"] = latency_timeline(
            rl, applied_windows(runs.bursts), out_dir / "latency_timeline.png"
        )
        made["epsilon_loss"] = epsilon_and_loss(rl, out_dir / "epsilon_loss.png")
    if not runs.evals.empty:
        made["accuracy_vs_time"] = accuracy_vs_time(runs, out_dir / "accuracy_vs_time.png")
    axis = tables.get("timeout_axis")
    if axis is not None and not axis.empty:
        made["timeout_axis"] = timeout_axis(
            axis, out_dir / "timeout_axis.png", label_kinds(runs.runs)
        )
    paper = tables.get("paper")
    if paper is not None and not paper.empty:
        made["headline_ratios"] = headline_bars(paper, out_dir / "headline_ratios.png")
    return made
