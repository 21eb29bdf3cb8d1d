"""Round latency: its CDF per transport and preset, and its timeline with bursts shaded."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis.figures.style import (
    BURST_COLOR,
    WORKLOAD_X,
    first_repeats,
    label_colors,
    label_kinds,
    legend_below,
    log_ms_axis,
    preset_order,
    preset_roles,
    preset_styles,
    save,
    workload_names,
)


def latency_cdf(rl: pd.DataFrame, path: Path) -> Path:
    """Empirical CDF of round latency (max over ranks, repeats pooled): a panel per workload,
    a line per transport and preset."""
    workloads = workload_names(rl)
    colors, styles = label_colors(label_kinds(rl)), preset_styles(preset_roles(rl))
    fig, axes = plt.subplots(
        1, len(workloads), figsize=(4.6 * len(workloads) + 0.6, 4.4), layout="constrained",
        squeeze=False,
    )  # fmt: skip
    for ax, workload in zip(axes[0], workloads, strict=True):
        w = rl[rl["workload"] == workload]
        for (label, preset), g in w.groupby(["label", "preset"]):
            x = np.sort(g["latency_ms"].to_numpy())
            y = np.arange(1, len(x) + 1) / len(x)
            ax.step(x, y, where="post", color=colors[label], ls=styles[preset], lw=1.4)
        log_ms_axis(ax, w["latency_ms"].to_numpy())
        ax.set_ylim(0, 1.01)
        ax.set_xlabel("round latency, max over ranks (ms, log scale)")
        ax.set_title(
            f"{workload}: {w['run_id'].nunique()} runs, {len(w)} rounds"
            f" ({WORKLOAD_X.get(workload, 'round')}s, warm-up excluded)",
            fontsize=9,
        )
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
    axes[0, 0].set_ylabel("fraction of rounds ≤ latency")
    fig.suptitle("Round-latency CDF per transport and burst preset")
    legend_below(fig, colors, styles)
    return save(fig, path)


#: The timeline's narrowest width (inches): its title's two lines and its legend fit in it.
MIN_WIDTH_IN = 7.6


def latency_timeline(rl: pd.DataFrame, windows: pd.DataFrame, path: Path) -> Path:
    """Round latency over time for every (workload, label, preset) — its first repeat: a block
    per workload, a row per transport, a column per preset; applied burst windows shaded and
    the rounds that overlapped one marked. The title says how many runs it shows."""
    first = first_repeats(rl)
    colors = label_colors(label_kinds(first))
    workloads = workload_names(first)
    by_role = preset_order(preset_roles(first))
    shape = {
        w: (
            sorted(first.loc[first["workload"] == w, "label"].unique()),
            sorted(first.loc[first["workload"] == w, "preset"].unique(), key=by_role),
        )
        for w in workloads
    }
    n_cols = max(len(p) for _, p in shape.values())
    heights = [len(lab) + 0.6 for lab, _ in shape.values()]
    # at least MIN_WIDTH_IN wide: one preset's column alone cannot hold the title and legend
    width = max(3.3 * n_cols + 0.9, MIN_WIDTH_IN)
    fig = plt.figure(figsize=(width, 1.4 * sum(heights) + 1.5), layout="constrained")
    subfigs = fig.subfigures(len(workloads), 1, height_ratios=heights, squeeze=False)[:, 0]
    for sub, workload in zip(subfigs, workloads, strict=True):
        labels, presets = shape[workload]
        axes = sub.subplots(len(labels), n_cols, squeeze=False, sharex=True, sharey="row")
        w = first[first["workload"] == workload]
        for i, label in enumerate(labels):
            for j in range(n_cols):
                ax = axes[i, j]
                preset = presets[j] if j < len(presets) else None
                r = w[(w["label"] == label) & (w["preset"] == preset)].sort_values("t_rel_s")
                if r.empty:
                    ax.set_axis_off()
                    if preset is not None:
                        ax.text(0.5, 0.5, f"{label} · {preset}: not run", ha="center",
                                va="center", transform=ax.transAxes, color="0.5")  # fmt: skip
                    continue
                _timeline_panel(ax, r, windows, colors[label])
                ax.set_title(f"{label} · {preset}", fontsize=8, pad=2)
                if j == 0:
                    ax.set_ylabel("latency (ms)")
                below = w[w["label"].isin(labels[i + 1 :]) & (w["preset"] == preset)]
                if below.empty:  # the lowest panel of its column
                    ax.xaxis.set_tick_params(labelbottom=True)
                    ax.set_xlabel(f"time since first {WORKLOAD_X.get(workload, 'round')} (s)")
        sub.suptitle(f"{workload}", fontsize=10, fontweight="bold")
    n_total, shown = rl["run_id"].nunique(), first["run_id"].nunique()
    which = (
        f"all {n_total} runs"
        if shown == n_total
        else f"{shown} of {n_total} runs: the first repeat of each transport × preset"
    )
    fig.suptitle(f"Round latency (max over ranks) over time,\n{which}")
    extra = (
        Patch(facecolor=BURST_COLOR, edgecolor=BURST_COLOR, alpha=0.3,
              label="applied burst window"),
        Line2D([], [], ls="", marker="o", ms=4, mfc=BURST_COLOR, mec="k", mew=0.3,
               label="round overlapping a burst"),
        Line2D([], [], ls="-", marker="o", ms=2, lw=0.8, color="0.3",
               label="other rounds (colour: transport)"),
    )  # fmt: skip
    legend_below(fig, {}, {}, extra)
    return save(fig, path)


def _timeline_panel(ax: plt.Axes, r: pd.DataFrame, windows: pd.DataFrame, color) -> None:
    origin = float(r["origin_s"].iloc[0])
    t_last = float(r["t_rel_s"].max())
    for w in windows[windows["run_id"] == r["run_id"].iloc[0]].itertuples(index=False):
        start = w.start_s - origin
        end = t_last if math.isinf(w.end_s) else w.end_s - origin
        if start > t_last:
            continue  # the schedule ran past the last round
        # the edge line keeps a 100 ms window visible at print size
        ax.axvspan(start, end, facecolor=BURST_COLOR, edgecolor=BURST_COLOR, alpha=0.22, lw=0.8)
    ax.plot(r["t_rel_s"], r["latency_ms"], "-", color=color, lw=0.8)
    ax.plot(r["t_rel_s"], r["latency_ms"], "o", color=color, ms=2)
    hit = r[r["in_burst"]]
    ax.plot(hit["t_rel_s"], hit["latency_ms"], "o", ms=3.2, mfc=BURST_COLOR, mec="k", mew=0.3)
    ax.grid(True, alpha=0.3)
