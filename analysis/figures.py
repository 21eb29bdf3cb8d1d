"""The report's figures (PNG, Agg backend), drawn to be printed in a paper.

Every figure: its story in the title, units on every axis, legends outside the data (below
the axes), one colour per transport label and one line style per burst preset, the same in
every figure. Workloads (all-reduce rounds, training steps) never share an axis. Figures draw
the runs they are given; the report passes the ok runs only (`Runs.aggregated`).

One function per figure, each taking frames from `analysis.tables` and a path, returning the
path written. `make_figures` draws every figure the data supports (no evaluations, no accuracy
plot) and returns what it wrote, by name.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from analysis.load import Runs, origins  # noqa: E402
from analysis.tables import ADAPTIVE_MODE, PAPER_BASELINE, PUBLISHED, round_level  # noqa: E402
from analysis.windows import applied_windows  # noqa: E402

DPI = 150
BURST_COLOR = "tab:red"
#: Transports whose rounds have a loss tolerance ε; the others have none to draw.
EPSILON_TRANSPORTS = ("dblp",)
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
#: Ticks of the timeout axis (multiples of the calm round) besides the swept timeouts.
TIMEOUT_TICKS = (1, 1.5, 2, 3, 4, 6, 8, 12, 16)
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


# ---------------------------------------------------------------------------- shared


def _save(fig: plt.Figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


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
    return _assign(presets, PRESET_STYLES, OTHER_STYLES, order=_preset_order)


def _preset_order(p: str) -> tuple[int, str]:
    """Reference first (none), then the bursty presets, the CPU-only control (sham) last."""
    return (0 if p == "none" else 2 if p == "sham" else 1, p)


def _legend_below(
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


def _log_ms_axis(ax: plt.Axes, values: np.ndarray) -> None:
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


def _workloads(df: pd.DataFrame) -> list[str]:
    return sorted(df["workload"].unique())


def _first_repeats(rl: pd.DataFrame) -> pd.DataFrame:
    """The rows of each (workload, label, preset)'s lowest repeat."""
    keys = ["workload", "label", "preset"]
    return rl[rl["repeat"] == rl.groupby(keys)["repeat"].transform("min")]


# ---------------------------------------------------------------------------- figures


def latency_cdf(rl: pd.DataFrame, path: Path) -> Path:
    """Empirical CDF of round latency (max over ranks, repeats pooled): a panel per workload,
    a line per transport and preset."""
    workloads = _workloads(rl)
    colors, styles = label_colors(rl["label"]), preset_styles(rl["preset"])
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
        _log_ms_axis(ax, w["latency_ms"].to_numpy())
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
    _legend_below(fig, colors, styles)
    return _save(fig, path)


def latency_timeline(rl: pd.DataFrame, windows: pd.DataFrame, path: Path) -> Path:
    """Round latency over time for every (workload, label, preset) — its first repeat: a block
    per workload, a row per transport, a column per preset; applied burst windows shaded and
    the rounds that overlapped one marked. The title says how many runs it shows."""
    first = _first_repeats(rl)
    colors = label_colors(first["label"])
    workloads = _workloads(first)
    shape = {
        w: (
            sorted(first.loc[first["workload"] == w, "label"].unique()),
            sorted(first.loc[first["workload"] == w, "preset"].unique(), key=_preset_order),
        )
        for w in workloads
    }
    n_cols = max(len(p) for _, p in shape.values())
    heights = [len(lab) + 0.6 for lab, _ in shape.values()]
    fig = plt.figure(figsize=(3.3 * n_cols + 0.9, 1.4 * sum(heights) + 1.2), layout="constrained")
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
    fig.suptitle(f"Round latency (max over ranks) over time, {which}")
    extra = (
        Patch(facecolor=BURST_COLOR, edgecolor=BURST_COLOR, alpha=0.3,
              label="applied burst window"),
        Line2D([], [], ls="", marker="o", ms=4, mfc=BURST_COLOR, mec="k", mew=0.3,
               label="round overlapping a burst"),
        Line2D([], [], ls="-", marker="o", ms=2, lw=0.8, color="0.3",
               label="other rounds (colour: transport)"),
    )  # fmt: skip
    _legend_below(fig, {}, {}, extra)
    return _save(fig, path)


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


def accuracy_vs_time(runs: Runs, path: Path) -> Path:
    """Test accuracy against wall time since the first training step, one line per run."""
    e = runs.evals.copy()
    e["t_rel_s"] = e["t_s"] - e["run_id"].map(origins(runs))
    colors, styles = label_colors(e["label"]), preset_styles(e["preset"])
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
    ax.set_xlabel("wall time since first training step (s)")
    ax.set_ylabel("test accuracy (fraction)")
    title = "Test accuracy vs wall time"
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
    _legend_below(fig, colors, styles, extra)
    return _save(fig, path)


def _first_repeat_windows(runs: Runs, t_end: float) -> tuple[list[tuple[float, float]], list]:
    """The applied burst windows of each group's first repeat, in seconds since each run's
    origin, cut at t_end and merged where they overlap (the same seed plays the same schedule
    under every transport, so one band per event); and the presets they came from."""
    first = _first_repeats(runs.runs)["run_id"]
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


def epsilon_and_loss(rl: pd.DataFrame, path: Path) -> Path:
    """ε (dblp's loss tolerance; the other transports have none) and delivered loss per round,
    mean over repeats: a column per workload. Transports that delivered everything in every
    round are named, not drawn as lines on zero."""
    workloads = _workloads(rl)
    colors, styles = label_colors(rl["label"]), preset_styles(rl["preset"])
    fig, axes = plt.subplots(
        2, len(workloads), figsize=(4.8 * len(workloads) + 0.6, 5.6), layout="constrained",
        squeeze=False, sharex="col",
    )  # fmt: skip
    drawn: set[str] = set()
    for j, workload in enumerate(workloads):
        w = rl[rl["workload"] == workload]
        mean = w.groupby(["label", "preset", "transport", "iter"], as_index=False)[
            ["epsilon", "delivered_loss"]
        ].mean()
        eps = mean[mean["transport"].isin(EPSILON_TRANSPORTS)]
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
        no_eps = sorted(set(w["transport"]) - set(EPSILON_TRANSPORTS))
        axes[0, j].set_title(
            f"{workload}: ε per round"
            + (f"\n(only dblp has an ε; not drawn: {', '.join(no_eps)})" if no_eps else ""),
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
    _legend_below(fig, {k: v for k, v in colors.items() if k in drawn}, styles)
    return _save(fig, path)


def headline_bars(paper: pd.DataFrame, path: Path) -> Path:
    """The paper's two statistics per bursty preset (the `paper` table), published figures
    dashed: the end-to-end time cut with a 95% CI only where there were ≥ 2 repeats (else the
    bar says n=1), and the per-event hit-round ratio's max as a bar with its p90 and median
    marked (a max over events has no CI; the bar says over how many events)."""
    c = paper.copy()
    c["series"] = c["label"] + "\nvs " + c["baseline"]
    if c["workload"].nunique() > 1:
        c["series"] = c["workload"] + ":\n" + c["series"]
    presets = sorted(c["preset"].unique(), key=_preset_order)
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
    a1.axhline(100.0 * PUBLISHED["e2e_reduction_mean"], ls="--", color="k", lw=1, zorder=1)
    a1.axhline(100.0 * PUBLISHED["e2e_reduction_max"], ls=":", color="k", lw=1.2, zorder=1)
    a2.axhline(PUBLISHED["event_ratio_max"], ls="--", color="k", lw=1, zorder=1)
    a2.axhline(1.0, color="0.4", lw=0.8, zorder=1)
    a1.axhline(0, color="k", lw=0.6)
    a1.set_ylabel("end-to-end time cut (%)")
    a2.set_ylabel("hit-round latency ratio,\nbaseline / system (×)")
    a2.set_ylim(0, 1.2 * max(PUBLISHED["event_ratio_max"], float(c["event_ratio_max"].max())))
    a2.set_xticks(range(len(names)), names, fontsize=8)
    a1.margins(y=0.18)
    for ax in (a1, a2):
        ax.grid(True, axis="y", alpha=0.3)
    a1.set_title(f"End-to-end training-time cut vs {PAPER_BASELINE} labels (mean over repeats)")
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
        Line2D([], [], ls="--", color="k",
               label=f"published: {100 * PUBLISHED['e2e_reduction_mean']:.1f}% mean cut, "
               f"{PUBLISHED['event_ratio_max']:.2f}× max ratio"),
        Line2D([], [], ls=":", color="k", lw=1.2,
               label=f"published: {100 * PUBLISHED['e2e_reduction_max']:.1f}% max cut"),
        Line2D([], [], ls="", marker="_", ms=9, mew=1.6, color="k", label="p90 over events"),
        Line2D([], [], ls="", marker="x", ms=7, mew=1.6, color="k", label="median over events"),
    ]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 3),
               frameon=False)  # fmt: skip
    return _save(fig, path)


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


def timeout_axis(axis: pd.DataFrame, path: Path) -> Path:
    """The per-event hit-round ratio (optireduce / dblp, the `timeout_axis` table) against
    optireduce's hard timeout as a multiple of its calm round: a panel per (workload, preset),
    the max over events as markers on a line, p90 and median lighter; the adaptive mode a
    separate marker at its effective timeout (median hit round / calm p50); the published
    5.88x dashed and y = 1 (no difference) for reference."""
    groups = list(axis.groupby(["workload", "preset"], sort=True))
    colors = label_colors(axis["label"])
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
        ax.set_xlabel("optireduce hard timeout (× its calibrated calm-round p50, log scale)")
        events, seeds = int(g["events"].min()), int(g["seeds"].max())
        ax.set_title(f"{workload} · preset {preset}\n(each point: ≥ {events} events from "
                     f"{seeds} seed{'s' if seeds != 1 else ''})", fontsize=9)  # fmt: skip
        ax.grid(True, which="major", alpha=0.3)
    axes[0, 0].set_ylabel("hit-round latency ratio, optireduce / dblp (×)")
    fig.suptitle("Per burst event: hit-round latency under optireduce / under dblp, "
                 "against optireduce's timeout")  # fmt: skip
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
        Line2D([], [], color=c, lw=2, label=f"dblp label {lab}") for lab, c in colors.items()
    ]
    handles = [*(by_label if len(by_label) > 1 else []), *extra]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    return _save(fig, path)


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
        made["timeout_axis"] = timeout_axis(axis, out_dir / "timeout_axis.png")
    paper = tables.get("paper")
    if paper is not None and not paper.empty:
        made["headline_ratios"] = headline_bars(paper, out_dir / "headline_ratios.png")
    return made
