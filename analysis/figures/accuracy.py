"""Test accuracy against emulated time, first-repeat burst windows shaded."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from analysis.figures.style import (
    BURST_COLOR,
    first_repeats,
    label_colors,
    label_kinds,
    legend_below,
    preset_roles,
    preset_styles,
    save,
)
from analysis.load import Runs, origins
from analysis.windows import applied_windows


def accuracy_vs_time(runs: Runs, path: Path) -> Path:
    """Test accuracy against emulated time since the first training step (the tables' clock:
    under time dilation D, wall time / D), one line per run."""
    e = runs.evals.copy()
    e["t_rel_s"] = e["t_s"] - e["run_id"].map(origins(runs))
    runs_df = runs.runs[runs.runs["run_id"].isin(e["run_id"])]
    colors = label_colors(label_kinds(runs_df))
    styles = preset_styles(preset_roles(runs_df))
    per_run = e.groupby("run_id").size()
    fig, ax = plt.subplots(figsize=(7.6, 4.8), layout="constrained")
    for _, g in e.sort_values("t_rel_s").groupby("run_id"):
        lab, pre = g["label"].iloc[0], g["preset"].iloc[0]
        ax.plot(g["t_rel_s"], g["test_acc"], marker="o", ms=4, color=colors[lab],
                ls=styles[pre], lw=1.2)  # fmt: skip
    t_end = float(e["t_rel_s"].max())
    shaded, bursty = _first_repeat_windows(runs.only(e["run_id"].unique()), t_end)
    for start, end in shaded:
        # the edge line keeps a 40 ms window visible at print size
        ax.axvspan(start, end, facecolor=BURST_COLOR, edgecolor=BURST_COLOR, alpha=0.15, lw=0.6,
                   zorder=0)  # fmt: skip
    ax.set_xlabel("emulated time since first training step (s)")
    ax.set_ylabel("test accuracy (fraction)")
    title = "Test accuracy vs emulated time (evaluations included)"
    if per_run.max() <= 3:
        title += (
            f"\n(only {per_run.min()}–{per_run.max()} evaluations per run: "
            "the lines join the points, they are not measured curves)"
            if per_run.min() != per_run.max()
            else f"\n(only {per_run.max()} evaluations per run: the lines join the points, "
            "they are not measured curves)"
        )
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    extra = ()
    if shaded:
        what = f"burst windows, first repeat ({', '.join(bursty)})"
        extra = (Patch(facecolor=BURST_COLOR, edgecolor=BURST_COLOR, alpha=0.3, label=what),)
    legend_below(fig, colors, styles, extra)
    return save(fig, path)


def _first_repeat_windows(runs: Runs, t_end: float) -> tuple[list[tuple[float, float]], list]:
    """The applied burst windows of each group's first repeat, in seconds since each run's
    origin, cut at t_end and merged where they overlap (the same seed plays the same schedule
    under every transport, so one band per event); and the presets they came from."""
    first = first_repeats(runs.runs)["run_id"]
    w = applied_windows(runs.bursts)
    w = w[w["run_id"].isin(first)]
    origin = w["run_id"].map(origins(runs))
    spans = sorted(zip(w["start_s"] - origin, (w["end_s"] - origin).clip(upper=t_end), strict=True))
    merged: list[tuple[float, float]] = []
    for start, end in spans:
        if start >= t_end:
            break
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    presets = sorted(runs.runs.loc[runs.runs["run_id"].isin(w["run_id"]), "preset"].unique())
    return merged, presets
