"""The report's figures (PNG, Agg backend): each titled, each axis with its unit.

One function per figure, each taking frames from `analysis.tables` and a path, returning the
path written. `make_figures` draws every figure the data supports (no evaluations, no accuracy
plot) and returns what it wrote, by name.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from analysis.load import Runs, origins  # noqa: E402
from analysis.tables import PUBLISHED, paper_comparisons, round_level  # noqa: E402
from analysis.windows import applied_windows  # noqa: E402

DPI = 110
MAX_TIMELINE_PANELS = 8
BURST_COLOR = "tab:red"


def _save(fig: plt.Figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _with_hue(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """df with a legend column: the transport label, plus the preset and the workload when
    the frame holds several of them (so no line mixes two experiments)."""
    parts = ["label"] + [c for c in ("preset", "workload") if df[c].nunique() > 1]
    name = " / ".join("transport" if c == "label" else c for c in parts)
    key = df[parts[0]].astype(str)
    for c in parts[1:]:
        key = key + " / " + df[c].astype(str)
    return df.assign(**{name: key}), name


def latency_cdf(rl: pd.DataFrame, path: Path) -> Path:
    """Empirical CDF of round latency (max over ranks), one line per transport (and preset)."""
    df, hue = _with_hue(rl)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sns.ecdfplot(data=df, x="latency_ms", hue=hue, ax=ax)
    ax.set_xscale("log")
    ax.set_xlabel("round latency, max over ranks (ms, log scale)")
    ax.set_ylabel("fraction of rounds")
    ax.set_title("Round-latency CDF per transport")
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, path)


def latency_timeline(rl: pd.DataFrame, windows: pd.DataFrame, path: Path) -> Path:
    """Round latency over time, one panel per (label, preset) run of the first repeat,
    applied burst windows shaded."""
    first = rl[rl["repeat"] == rl.groupby(["label", "preset"])["repeat"].transform("min")]
    keys = first[["run_id", "label", "preset"]].drop_duplicates().head(MAX_TIMELINE_PANELS)
    fig, axes = plt.subplots(
        len(keys), 1, figsize=(8, 1.9 * len(keys) + 0.6), sharex=True, squeeze=False
    )
    for ax, run in zip(axes[:, 0], keys.itertuples(index=False), strict=True):
        r = rl[rl["run_id"] == run.run_id].sort_values("t_rel_s")
        origin = float(r["origin_s"].iloc[0])
        for w in windows[windows["run_id"] == run.run_id].itertuples(index=False):
            end = min(w.end_s, r["t_start_s"].max()) if w.end_s == float("inf") else w.end_s
            ax.axvspan(w.start_s - origin, end - origin, color=BURST_COLOR, alpha=0.15, lw=0)
        ax.plot(r["t_rel_s"], r["latency_ms"], ".-", ms=3, lw=0.8)
        ax.set_ylabel("latency (ms)")
        ax.set_title(f"{run.label} / {run.preset}  ({run.run_id})", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("time since first training step (s); shaded: applied bursts")
    fig.suptitle("Round latency over time, burst windows shaded")
    return _save(fig, path)


def accuracy_vs_time(runs: Runs, path: Path) -> Path:
    """Test accuracy against wall time since the first training step, one line per run."""
    e = runs.evals.copy()
    e["t_rel_s"] = e["t_s"] - e["run_id"].map(origins(runs))
    e, hue = _with_hue(e)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sns.lineplot(
        data=e.sort_values("t_rel_s"),
        x="t_rel_s",
        y="test_acc",
        hue=hue,
        units="run_id",
        estimator=None,
        marker="o",
        ax=ax,
    )
    ax.set_xlabel("wall time since first training step (s)")
    ax.set_ylabel("test accuracy (fraction)")
    ax.set_title("Test accuracy vs wall time")
    ax.grid(True, alpha=0.3)
    return _save(fig, path)


def epsilon_and_loss(rl: pd.DataFrame, path: Path) -> Path:
    """ε (loss tolerance) and delivered loss per round over training iterations."""
    df, hue = _with_hue(rl.sort_values("iter"))
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for ax, col, label in (
        (a1, "epsilon", "ε, loss tolerance (fraction)"),
        (a2, "delivered_loss", "delivered loss (fraction)"),
    ):
        sns.lineplot(data=df, x="iter", y=col, hue=hue, errorbar=None, lw=0.9, ax=ax)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    a1.set_title("ε and delivered loss over training (mean over repeats)")
    a2.set_xlabel("training iteration (step)")
    return _save(fig, path)


def headline_bars(comparisons: pd.DataFrame, path: Path) -> Path:
    """The paper's ratios vs optireduce with 95% CIs per bursty preset, published dashed."""
    c = paper_comparisons(comparisons).copy()
    c["series"] = c["label"] + " vs " + c["baseline"]
    if c["workload"].nunique() > 1:
        c["series"] = c["workload"] + ": " + c["series"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    panels = (
        (
            a1,
            "e2e_reduction",
            100.0,
            "end-to-end training-time reduction (%)",
            "mean",
            100.0 * PUBLISHED["e2e_reduction_mean"],
        ),
        (
            a2,
            "burst_speedup",
            1.0,
            "burst-round speedup (×)",
            "max",
            PUBLISHED["burst_speedup_max"],
        ),
    )
    for ax, col, scale, ylabel, which, published in panels:
        names = sorted(c["series"].unique())
        presets = sorted(c["preset"].unique())
        width = 0.8 / max(len(presets), 1)
        for j, preset in enumerate(presets):
            p = c[c["preset"] == preset].set_index("series").reindex(names)
            xs = [i + (j - (len(presets) - 1) / 2) * width for i in range(len(names))]
            y = p[col] * scale
            err = [(p[col] - p[f"{col}_lo"]) * scale, (p[f"{col}_hi"] - p[col]) * scale]
            err = [e.fillna(0).clip(lower=0) for e in err]
            ax.bar(xs, y.fillna(0), width, yerr=err, capsize=3, label=preset)
        ax.axhline(published, ls="--", color="k", lw=1, label=f"published ({which})")
        ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, title="burst preset", title_fontsize=8)
    a1.set_title("End-to-end reduction vs optireduce (95% CI)")
    a2.set_title("Burst-round speedup vs optireduce (95% CI)")
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
    comp = tables.get("comparisons")
    if comp is not None and not paper_comparisons(comp).empty:
        made["headline_ratios"] = headline_bars(comp, out_dir / "headline_ratios.png")
    return made
