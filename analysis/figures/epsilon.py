"""ε and delivered loss per round, a column per workload."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from analysis.figures.style import (
    WORKLOAD_X,
    label_colors,
    label_kinds,
    legend_below,
    preset_roles,
    preset_styles,
    save,
    workload_names,
)


def epsilon_and_loss(rl: pd.DataFrame, path: Path) -> Path:
    """ε (the loss tolerance of the transports whose traits say they use one; the others have
    none) and delivered loss per round,
    mean over repeats: a column per workload. Transports that delivered everything in every
    round are named, not drawn as lines on zero."""
    workloads = workload_names(rl)
    colors, styles = label_colors(label_kinds(rl)), preset_styles(preset_roles(rl))
    fig, axes = plt.subplots(
        2, len(workloads), figsize=(4.8 * len(workloads) + 0.6, 5.6), layout="constrained",
        squeeze=False, sharex="col",
    )  # fmt: skip
    drawn: set[str] = set()
    for j, workload in enumerate(workloads):
        w = rl[rl["workload"] == workload]
        keys = ["label", "preset", "transport", "uses_epsilon", "iter"]
        mean = w.groupby(keys, as_index=False)[["epsilon", "delivered_loss"]].mean()
        eps = mean[mean["uses_epsilon"]]
        lossy = mean.groupby(["label", "preset"])["delivered_loss"].transform("max") > 0
        zero = sorted(set(mean.loc[~lossy, "label"]) - set(mean.loc[lossy, "label"]))
        for ax, df, col in (
            (axes[0, j], eps, "epsilon"),
            (axes[1, j], mean[lossy], "delivered_loss"),
        ):
            for (label, preset), g in df.groupby(["label", "preset"]):
                ax.plot(g["iter"], g[col], color=colors[label], ls=styles[preset], lw=1.0)
                drawn.add(label)
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
            if df.empty:
                ax.text(0.5, 0.5, "nothing to draw", ha="center", va="center",
                        transform=ax.transAxes, color="0.5")  # fmt: skip
        no_eps = sorted(set(w.loc[~w["uses_epsilon"], "transport"]))
        axes[0, j].set_title(
            f"{workload}: ε per round"
            + (f"\n(no ε, not drawn: {', '.join(no_eps)})" if no_eps else ""),
            fontsize=9,
        )
        axes[1, j].set_title(
            f"{workload}: delivered loss per round"
            + ("\n(" + textwrap.shorten("always 0: " + ", ".join(zero), 70) + ")" if zero else ""),
            fontsize=9,
        )
        axes[1, j].set_xlabel(f"{WORKLOAD_X.get(workload, 'round')} (warm-up excluded)")
    axes[0, 0].set_ylabel("ε, loss tolerance (fraction)")
    axes[1, 0].set_ylabel("delivered loss (fraction)")
    fig.suptitle("Loss tolerance ε and delivered loss over the run (mean over repeats)")
    legend_below(fig, {k: v for k, v in colors.items() if k in drawn}, styles)
    return save(fig, path)
