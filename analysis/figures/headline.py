"""The paper's two statistics as bars beside the published figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis.figures.style import preset_order, save
from analysis.tables.constants import PUBLISHED
from analysis.tables.roles import COMPARISONS, PAPER

#: What a workload's end-to-end time is, for the panel that holds it.
WORKLOAD_TIME = {"train": "training time", "allreduce": "all-reduce time"}


def headline_bars(paper: pd.DataFrame, path: Path) -> Path:
    """The paper's two statistics per bursty preset (the `paper` table), published figures
    dashed: the end-to-end time cut with a 95% CI only where there were ≥ 2 repeats (else the
    bar says n=1), and the per-event hit-round ratio's max as a bar with its p90 and median
    marked (a max over events has no CI; the bar says over how many events). One comparison:
    the paper's if it has rows, else the design's; the published figures only beside the
    paper's."""
    comparison = next(k for k in COMPARISONS if (paper["comparison"] == k).any())
    mine = comparison == PAPER
    c = paper[paper["comparison"] == comparison].copy()
    c["series"] = c["label"] + "\nvs " + c["baseline"]
    if c["workload"].nunique() > 1:
        c["series"] = c["workload"] + ":\n" + c["series"]
    presets = sorted(c["preset"].unique(), key=preset_order({}))
    bar_colors = dict(
        zip(presets, plt.get_cmap("Blues")(np.linspace(0.55, 0.85, len(presets))), strict=True)
    )
    names = sorted(c["series"].unique())
    n_min, n_max = int(c["n"].min()), int(c["n"].max())
    width = 0.8 / max(len(presets), 1)
    fig_w = max(7.0, 1.1 * len(names) * max(1.0, 0.7 * len(presets)) + 1.5)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(fig_w, 7.4), layout="constrained", sharex=True)
    for j, preset in enumerate(presets):
        p = c[c["preset"] == preset].set_index("series").reindex(names)
        xs = np.arange(len(names)) + (j - (len(presets) - 1) / 2) * width
        n = p["n"].to_numpy(dtype=float)
        y = (100.0 * p["e2e_reduction"]).to_numpy(dtype=float)
        lo = (100.0 * p["e2e_reduction_lo"]).to_numpy(dtype=float)
        hi = (100.0 * p["e2e_reduction_hi"]).to_numpy(dtype=float)
        has_ci = np.isfinite(lo) & np.isfinite(hi) & (n >= 2)
        a1.bar(xs, np.nan_to_num(y), width * 0.92, color=bar_colors[preset])
        if has_ci.any():
            err = np.vstack([y - lo, hi - y])[:, has_ci]
            a1.errorbar(xs[has_ci], y[has_ci], yerr=err, fmt="none", ecolor="k", capsize=3, lw=1)
        top = np.where(has_ci, hi, y)  # labels above the error bar, not on it
        _bar_labels(a1, xs, top, [f"{v:.1f}%\nn={int(k)}" if np.isfinite(v) else ""
                                   for v, k in zip(y, n, strict=True)])  # fmt: skip
        ymax = p["event_ratio_max"].to_numpy(dtype=float)
        a2.bar(xs, np.nan_to_num(ymax), width * 0.92, color=bar_colors[preset])
        for col, marker in (("event_ratio_p90", "_"), ("event_ratio_median", "x")):
            a2.plot(xs, p[col].to_numpy(dtype=float), ls="", marker=marker, ms=9, mew=1.6,
                    color="k", zorder=4)  # fmt: skip
        _bar_labels(a2, xs, ymax, [f"{v:.2f}×" if np.isfinite(v) else "" for v in ymax])
    # the value goes in the legend: a label on the line collided with the bars' labels
    if mine:  # the published figures measured the paper's comparison only
        a1.axhline(100.0 * PUBLISHED["e2e_reduction_mean"], ls="--", color="k", lw=1, zorder=1)
        a1.axhline(100.0 * PUBLISHED["e2e_reduction_max"], ls=":", color="k", lw=1.2, zorder=1)
        a2.axhline(PUBLISHED["event_ratio_max"], ls="--", color="k", lw=1, zorder=1)
    a2.axhline(1.0, color="0.4", lw=0.8, zorder=1)
    a1.axhline(0, color="k", lw=0.6)
    a1.set_ylabel("end-to-end time cut (%)")
    a2.set_ylabel("hit-round latency ratio,\nbaseline / system (×)")
    top = PUBLISHED["event_ratio_max"] if mine else 1.0
    a2.set_ylim(0, 1.2 * max(top, float(c["event_ratio_max"].max())))
    a2.set_xticks(range(len(names)), names, fontsize=8)
    a1.margins(y=0.18)
    for ax in (a1, a2):
        ax.grid(True, axis="y", alpha=0.3)
    held = " and ".join(WORKLOAD_TIME.get(w, f"{w} time") for w in sorted(c["workload"].unique()))
    a1.set_title(f"End-to-end cut of the {held}, {comparison} comparison (arithmetic mean)")
    events, seeds = c["events"].dropna(), c["seeds"].dropna()
    a2.set_title(
        "Per burst event: the hit round's latency ratio\nmax (bar) over "
        + _span(events, "event")
        + " from "
        + _span(seeds, "seed")
    )
    if n_max < 2:
        ci = "one repeat each: no confidence interval"
    elif n_min < 2:
        ci = "95% CI where n ≥ 2 repeats; n=1 has none"
    else:
        ci = (
            f"95% CI over {n_min}–{n_max} repeats"
            if n_min != n_max
            else f"95% CI over {n_max} repeats"
        )
    fig.suptitle(f"The paper's statistics under bursts (time cut: {ci})")
    handles = [Patch(color=bar_colors[p], label=f"preset {p}") for p in presets]
    handles += [
        *_published_handles(mine),
        Line2D([], [], ls="", marker="_", ms=9, mew=1.6, color="k", label="p90 over events"),
        Line2D([], [], ls="", marker="x", ms=7, mew=1.6, color="k", label="median over events"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 3),
               frameon=False)  # fmt: skip
    return save(fig, path)


def _published_handles(mine: bool) -> list[Line2D]:
    """The published lines' legend, when drawn (the paper's comparison)."""
    if not mine:
        return []
    return [
        Line2D([], [], ls="--", color="k",
               label=f"published: {100 * PUBLISHED['e2e_reduction_mean']:.1f}% mean cut, "
               f"{PUBLISHED['event_ratio_max']:.2f}× max ratio"),
        Line2D([], [], ls=":", color="k", lw=1.2,
               label=f"published: {100 * PUBLISHED['e2e_reduction_max']:.1f}% max cut"),
    ]  # fmt: skip


def _span(values: pd.Series, noun: str) -> str:
    """ "36 events", "3–42 events": the range of counts behind a set of bars."""
    lo, hi = int(values.min()), int(values.max())
    return f"{lo}{f'–{hi}' if hi != lo else ''} {noun}{'s' if hi != 1 else ''}"


def _bar_labels(ax: plt.Axes, xs: np.ndarray, tops: np.ndarray, texts: Sequence[str]) -> None:
    """A label above each bar (blank for a missing one), boxed so a grid line stays behind."""
    for x, t, text in zip(xs, tops, texts, strict=True):
        if text:
            ax.annotate(text, (x, max(float(t), 0.0)), textcoords="offset points",
                        xytext=(0, 2), ha="center", va="bottom", fontsize=7, zorder=5,
                        bbox={"fc": "white", "ec": "none", "alpha": 0.85, "pad": 0.4})  # fmt: skip
