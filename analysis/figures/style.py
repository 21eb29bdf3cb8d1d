"""What every figure shares, so they look alike: DPI and fonts, a colour per transport label,
a line style per burst preset, legends below the axes, a readable log-ms axis."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D

DPI = 150
BURST_COLOR = "tab:red"
#: Colours of the known transport labels (others take the next free colour of tab10).
LABEL_COLORS = {
    "tcp": "tab:gray",
    "tcp-rto5ms": "tab:brown",
    "optireduce": "tab:orange",
    "optireduce-fixed": "tab:olive",
    "dblp": "tab:blue",
    "dblp-phase-off": "tab:cyan",
    "reliable": "tab:purple",
}
#: Line styles of burst presets: the unimpaired reference dotted, the CPU-only control dashed.
PRESET_STYLES = {"none": ":", "sham": "--"}
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


def _assign(keys: Iterable[str], fixed: dict, spare: Sequence, order=None) -> dict:
    """Each key its fixed value, else the next spare one (cycling): the same in every figure."""
    out, k = {}, 0
    for key in sorted(set(keys), key=order):
        if key in fixed:
            out[key] = fixed[key]
        else:
            out[key] = spare[k % len(spare)]
            k += 1
    return out


def label_colors(labels: Iterable[str]) -> dict[str, str]:
    """A fixed colour per transport label; others take, in turn, the colours of tab10, Dark2
    and tab20b that no fixed label and no burst shading uses (compared as hex: the colour maps
    give RGB tuples), so a sweep's many labels stay apart."""
    taken = {to_hex(c) for c in (*LABEL_COLORS.values(), BURST_COLOR)}
    maps = ("tab10", "Dark2", "tab20b")
    spare = [c for m in maps for c in plt.get_cmap(m).colors]
    free = list({to_hex(c): c for c in spare if to_hex(c) not in taken}.values())
    return _assign(labels, LABEL_COLORS, free)


def preset_styles(presets: Iterable[str]) -> dict[str, object]:
    """A fixed line style per burst preset: bursty presets solid, `none` dotted, `sham` dashed."""
    return _assign(presets, PRESET_STYLES, OTHER_STYLES, order=preset_order)


def preset_order(p: str) -> tuple[int, str]:
    """Reference first (none), then the bursty presets, the CPU-only control (sham) last."""
    return (0 if p == "none" else 2 if p == "sham" else 1, p)


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
