"""What every figure shares, so they look alike: DPI and fonts, a colour per transport label,
a line style per burst preset, legends below the axes, a readable log-ms axis.

Colours and styles come from what run.json says a run is, never from names: a label's colour
from its transport's completion (a family of hues per kind: bounded-loss blues and greens,
bounded-time oranges and browns, exact greys and purples), the labels of one kind taking its
colours in label order; a preset's line style from its role (calm dotted, control dashed)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.lines import Line2D

DPI = 150
BURST_COLOR = "tab:red"
#: Colours per completion kind, in the order a kind's labels (sorted) take them; a kind with
#: more labels than colours cycles. "" (no transport, or one these runs lack): the rest.
KIND_COLORS = {
    "bounded-loss": ("tab:blue", "tab:cyan", "tab:green", "#08306b", "#74c476", "#6baed6",
                     "#00441b", "#9ecae1"),
    "bounded-time": ("tab:orange", "tab:brown", "tab:olive", "#fdae6b", "#7f2704", "#e6550d",
                     "#d6a756", "#a63603"),
    "exact": ("tab:gray", "tab:purple", "black", "#9e9ac8", "#54278f", "#bdbdbd", "#3f007d"),
    "": ("tab:pink", "#e7298a", "#c994c7", "#7a0177"),
}  # fmt: skip
#: Line styles of burst presets by role: the unimpaired reference dotted, the CPU-only
#: control dashed, the bursty ones in turn from OTHER_STYLES.
ROLE_STYLES = {"calm": ":", "control": "--"}
OTHER_STYLES = ("-", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)))
WORKLOAD_X = {"allreduce": "all-reduce round", "train": "training step"}

plt.rcParams.update(
    {
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "legend.fontsize": 8,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
    }
)


def write_png(fig: plt.Figure, path: Path) -> Path:
    """Write fig at DPI (making its directory) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def save(fig: plt.Figure, path: Path) -> Path:
    """Every figure leaves through `analysis.figures._save` (`write_png`), looked up when
    called, so one seam catches each figure as drawn, before it is closed (the tests do)."""
    from analysis import figures

    return figures._save(fig, path)


def label_kinds(df: pd.DataFrame) -> dict[str, str]:
    """label -> its transport's completion, from a frame with both columns (runs, rounds)."""
    return dict(zip(df["label"], df["completion"], strict=True))


def label_colors(kinds: Mapping[str, str]) -> dict[str, str]:
    """A colour per transport label (kinds: label -> completion): the labels of one
    completion kind take its KIND_COLORS in label order, so a label's colour depends only on
    the labels of its kind in the figure; a label of an unknown kind takes the rest's."""
    out: dict[str, str] = {}
    by_kind: dict[str, list[str]] = {}
    for label, kind in kinds.items():
        by_kind.setdefault(kind if kind in KIND_COLORS else "", []).append(label)
    for kind, labels in by_kind.items():
        palette = KIND_COLORS[kind]
        for i, label in enumerate(sorted(set(labels))):
            out[label] = palette[i % len(palette)]
    return dict(sorted(out.items()))


def preset_roles(df: pd.DataFrame) -> dict[str, str]:
    """preset -> its role, from a frame with `preset` and `preset_role` (runs, rounds)."""
    return dict(zip(df["preset"], df["preset_role"], strict=True))


def preset_styles(roles: Mapping[str, str]) -> dict[str, object]:
    """A line style per burst preset (roles: preset -> role): the calm reference dotted, the
    control dashed, the bursty presets solid and then the other styles in turn."""
    out, k = {}, 0
    for p in sorted(roles, key=preset_order(roles)):
        if roles[p] in ROLE_STYLES:
            out[p] = ROLE_STYLES[roles[p]]
        else:
            out[p] = OTHER_STYLES[k % len(OTHER_STYLES)]
            k += 1
    return out


def preset_order(roles: Mapping[str, str]) -> Callable[[str], tuple[int, str]]:
    """A sort key over preset names: the calm reference first, then the bursty presets, the
    CPU-only control last (a preset missing from roles counts as bursty)."""
    rank = {"calm": 0, "control": 2}
    return lambda p: (rank.get(roles.get(p, ""), 1), p)


def legend_below(
    fig: plt.Figure, colors: dict[str, str], styles: dict[str, object], extra=()
) -> None:
    """One legend under the axes: a colour per transport, a line style per preset, extras."""
    handles = [Line2D([], [], color=c, lw=2, label=lab) for lab, c in colors.items()]
    if len(styles) > 1:
        handles += [
            Line2D([], [], color="0.25", ls=s, lw=1.5, label=f"preset {p}")
            for p, s in styles.items()
        ]
    handles += list(extra)
    if not handles:
        return  # nothing was drawn (e.g. only transports without ε and with no loss)
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(len(handles), 5),
        frameon=False,
        title=(
            ("colour: transport" if colors else "")
            + (" · line: burst preset" if len(styles) > 1 else "")
        )
        or None,
        title_fontsize=8,
    )


def log_ms_axis(ax: plt.Axes, values: np.ndarray) -> None:
    """A log axis with plain-number ticks (100, 200, 500, 1000 ms), never 2×10²; ticks at
    1-2-5 over wide ranges, denser over less than a decade so a narrow panel still has some."""
    v = values[np.isfinite(values) & (values > 0)]
    span = math.log10(v.max() / v.min()) if v.size else 2.0
    if span > 1.2:
        subs: tuple[float, ...] = (1.0, 2.0, 5.0)
    elif span > 0.7:  # about a decade: 4-6-8 thousand would crowd the top end
        subs = (1.0, 1.5, 2.0, 3.0, 5.0)
    else:
        subs = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(
        ticker.FuncFormatter(lambda x, _: f"{x:,.0f}" if x >= 1 else f"{x:g}")
    )
    ax.xaxis.set_minor_locator(ticker.LogLocator(base=10, subs=np.arange(1, 10)))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


def workload_names(df: pd.DataFrame) -> list[str]:
    return sorted(df["workload"].unique())


def first_repeats(rl: pd.DataFrame) -> pd.DataFrame:
    """The rows of each (workload, label, preset)'s lowest repeat."""
    keys = ["workload", "label", "preset"]
    return rl[rl["repeat"] == rl.groupby(keys)["repeat"].transform("min")]
