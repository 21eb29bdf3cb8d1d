"""The per-event hit-round ratio against a bounded-time baseline's timeout."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.lines import Line2D

from analysis.figures.style import label_colors, save
from analysis.tables.constants import ADAPTIVE_MODE, PUBLISHED

#: Ticks of the timeout axis (multiples of the calm round) besides the swept timeouts.
TIMEOUT_TICKS = (1, 1.5, 2, 3, 4, 6, 8, 12, 16)


def timeout_axis(axis: pd.DataFrame, path: Path, kinds: Mapping[str, str] | None = None) -> Path:
    """The per-event hit-round ratio (baseline / system, the `timeout_axis` table) against
    the bounded-time baseline's hard timeout as a multiple of its calm round (kinds: label ->
    completion, for the colours): a panel per (workload, preset),
    the max over events as markers on a line, p90 and median lighter; the adaptive mode a
    separate marker at its effective timeout (median hit round / calm p50); the published
    5.88x dashed and y = 1 (no difference) for reference."""
    groups = list(axis.groupby(["workload", "preset"], sort=True))
    colors = label_colors({lab: (kinds or {}).get(lab, "") for lab in axis["label"]})
    fig, axes = plt.subplots(
        1, len(groups), figsize=(max(8.6, 5.2 * len(groups) + 0.6), 4.6), layout="constrained",
        squeeze=False, sharey=True,
    )  # fmt: skip
    stats = (("event_ratio_max", "-", 1.0, 1.8), ("event_ratio_p90", "--", 0.5, 1.1),
             ("event_ratio_median", ":", 0.5, 1.1))  # fmt: skip
    published = PUBLISHED["event_ratio_max"]
    top = max(published, float(axis["event_ratio_max"].max())) * 1.12
    for ax, ((workload, preset), g) in zip(axes[0], groups, strict=True):
        for label, a in g.groupby("label"):
            fixed = a[a["mode"] != ADAPTIVE_MODE].sort_values("timeout_x")
            adaptive = a[a["mode"] == ADAPTIVE_MODE]
            for col, ls, alpha, lw in stats:
                ax.plot(fixed["timeout_x"], fixed[col], ls=ls, marker="o" if lw > 1.5 else ".",
                        ms=5, lw=lw, color=colors[label], alpha=alpha, zorder=3)  # fmt: skip
                ax.plot(adaptive["timeout_x"], adaptive[col], ls="", marker="D",
                        ms=7 if lw > 1.5 else 4, mfc="white" if lw > 1.5 else colors[label],
                        mec=colors[label], mew=1.5, alpha=alpha, zorder=4)  # fmt: skip
        ax.axhline(published, ls="--", color="k", lw=1, zorder=1)
        ax.axhline(1.0, color="0.5", lw=0.8, zorder=1)
        xs = g["timeout_x"].dropna().to_numpy(float)
        lo, hi = xs.min() / 1.2, xs.max() * 1.2
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.text(xs.min() / 1.15, published, f"published {published:g}×", va="bottom",
                ha="left", fontsize=8)  # fmt: skip
        swept = set(np.round(g.loc[g["mode"] != ADAPTIVE_MODE, "timeout_x"].dropna(), 2))
        ticks = sorted(swept | {t for t in TIMEOUT_TICKS if lo <= t <= hi})
        ax.xaxis.set_major_locator(ticker.FixedLocator(ticks))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}×"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_ylim(0, top)
        ax.set_xlabel("baseline's hard timeout (× its calibrated calm-round p50, log scale)")
        events, seeds = int(g["events"].min()), int(g["seeds"].max())
        ax.set_title(f"{workload} · preset {preset}\n(each point: ≥ {events} events from "
                     f"{seeds} seed{'s' if seeds != 1 else ''})", fontsize=9)  # fmt: skip
        ax.grid(True, which="major", alpha=0.3)
    axes[0, 0].set_ylabel("hit-round latency ratio, baseline / system (×)")
    fig.suptitle("Per burst event: hit-round latency under the baseline / under the system, "
                 "against the baseline's timeout")  # fmt: skip
    ref = "0.3"
    extra = (
        Line2D([], [], color=ref, ls="-", lw=1.8, marker="o", ms=5, label="max over events"),
        Line2D([], [], color=ref, ls="--", lw=1.1, marker=".", alpha=0.5, label="p90"),
        Line2D([], [], color=ref, ls=":", lw=1.1, marker=".", alpha=0.5, label="median"),
        Line2D([], [], color=ref, ls="", marker="D", ms=7, mfc="white", mew=1.5,
               label="adaptive mode, at its median hit round (× calm p50)"),
        Line2D([], [], color="k", ls="--", lw=1, label=f"published {published:g}× (a max)"),
        Line2D([], [], color="0.5", lw=0.8, label="y = 1: no difference"),
    )  # fmt: skip
    by_label = [
        Line2D([], [], color=c, lw=2, label=f"system label {lab}") for lab, c in colors.items()
    ]
    handles = [*(by_label if len(by_label) > 1 else []), *extra]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    return save(fig, path)
