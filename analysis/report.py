"""report.md for one or many runs: validity first, then the headline, tables and figures.

A run that failed, was interrupted, is still marked running, or was starved of CPU says so at
the top, before any number, so a reader never takes a partial measurement for a result.
Each table is also written as CSV (numbers, not formatted strings) under `tables/`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from analysis.figures import make_figures
from analysis.load import Runs, load_runs, mixed_specs
from analysis.tables import GROUP, PUBLISHED, build_tables

#: Tables in report order, with their headings.
SECTIONS = {
    "paper": "Paper's ratios vs optireduce, beside the published figures",
    "latency": "Round latency (ms, max over ranks) in and outside bursts",
    "comparisons": "Each transport vs each baseline (burst-round speedup, e2e reduction, Δ acc)",
    "training": "Training time, time-to-accuracy, final accuracy",
    "loss": "Delivered loss, repairs, cap hits, replica drift, bursts",
    "validity": "Validity of each run",
    "probes": "Probe workloads (iperf3 / ping) in and outside bursts",
}

FIGURE_TITLES = {
    "latency_cdf": "Round-latency CDF",
    "latency_timeline": "Round latency over time (bursts shaded)",
    "accuracy_vs_time": "Test accuracy vs wall time",
    "epsilon_loss": "ε and delivered loss over training",
    "headline_ratios": "Headline ratios vs optireduce",
}


#: Short headers for the terminal's headline table (paper = the published figure).
HEADLINE_NAMES = {
    "baseline": "vs",
    "e2e_reduction_mean": "e2e cut mean",
    "published_e2e_reduction_mean": "paper mean",
    "e2e_reduction_max": "e2e cut max",
    "published_e2e_reduction_max": "paper max",
    "burst_speedup_max": "burst speedup max [95% CI]",
    "published_burst_speedup_max": "paper speedup",
}


@dataclass(frozen=True)
class Report:
    path: Path
    tables: dict[str, pd.DataFrame]
    figures: dict[str, Path]
    headline_title: str
    headline: pd.DataFrame  # display strings
    warnings: tuple[str, ...]


def run_warnings(runs: Runs) -> list[str]:
    """One line per run that is not a clean, complete, well-fed measurement."""
    out = []
    for r in runs.runs.itertuples(index=False):
        if r.status != "ok":
            why = f": {r.reason}" if r.reason else ""
            out.append(f"run `{r.run_id}` is **{r.status.upper()}**{why} (partial data)")
        warns = [w for w in r.warnings.split("; ") if w]
        if r.starved:
            detail = "".join(f"; {w}" for w in warns if w.startswith("starved"))
            out.append(
                f"run `{r.run_id}` is **STARVED** (the emulator could not keep up; "
                f"its latencies measure the CPU, not the network{detail})"
            )
        if r.oversubscribed:
            out.append(f"run `{r.run_id}` ran **oversubscribed** (more workers than cores)")
        # the flags above already say what the orchestrator's own warnings would repeat
        said = ("starved", "oversubscribed")
        rest = [w for w in warns if not w.startswith(said)]
        if rest:
            out.append(f"run `{r.run_id}` warnings: {'; '.join(rest)}")
        probe_run = (runs.probes["run_id"] == r.run_id).any()
        if not probe_run and (runs.rounds["run_id"] == r.run_id).sum() == 0:
            out.append(f"run `{r.run_id}` has **no rounds** recorded")
    out += [f"**mixed group** {m}: its repeats are not one experiment" for m in mixed_specs(runs)]
    return out


def _fmt(x: object, col: str) -> str:
    if isinstance(x, bool):
        return "yes" if x else ""
    if isinstance(x, float):
        if math.isnan(x):
            return "–"
        if col.endswith(("reduction", "reduction_mean", "reduction_max")):
            return f"{100 * x:.1f}%"
        if col.endswith("speedup") or col.endswith("speedup_max"):
            return f"{x:.2f}×"
        return f"{x:.4g}"
    return str(x)


def display(df: pd.DataFrame) -> pd.DataFrame:
    """Strings for humans: x, x_lo, x_hi columns fold into "x [lo, hi]"."""
    out = {}
    cols = list(df.columns)
    for c in cols:
        if c.endswith(("_lo", "_hi")) and c[:-3] in cols:
            continue
        vals = [_fmt(v, c) for v in df[c]]
        if f"{c}_lo" in cols and f"{c}_hi" in cols:
            lo = [_fmt(v, c) for v in df[f"{c}_lo"]]
            hi = [_fmt(v, c) for v in df[f"{c}_hi"]]
            vals = [
                v if a == "–" else f"{v} [{a}, {b}]" for v, a, b in zip(vals, lo, hi, strict=True)
            ]
        out[c] = vals
    return pd.DataFrame(out, columns=list(out))


def markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table of display strings."""
    if df.empty:
        return "_(no rows)_\n"
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in df.values]
    return "\n".join([head, rule, *body]) + "\n"


def headline(tables: dict[str, pd.DataFrame]) -> tuple[str, pd.DataFrame]:
    """The terminal's table: the paper's ratios if there is an optireduce baseline, else
    round latency per transport."""
    paper = tables["paper"]
    if not paper.empty:
        cols = [
            "workload",
            "label",
            "baseline",
            "e2e_reduction_mean",
            "published_e2e_reduction_mean",
            "e2e_reduction_max",
            "published_e2e_reduction_max",
            "burst_speedup_max",
            "burst_speedup_max_lo",
            "burst_speedup_max_hi",
            "published_burst_speedup_max",
            "validity",
        ]
        d = display(paper[cols]).rename(columns=HEADLINE_NAMES)
        return "Paper's ratios vs optireduce (published: 24.4% / 33.9% / 5.88×)", d
    lat = tables["latency"]
    cols = [*GROUP, "runs", "p50_all_ms", "p99_all_ms", "p50_in_ms", "p50_out_ms", "validity"]
    return "Round latency per transport (ms)", display(lat[cols] if not lat.empty else lat)


def write_report(
    run_dirs: Sequence[Path], out_dir: Path, target_acc: float | None = None
) -> Report:
    """Load the runs, build tables and figures, write out_dir/report.md and tables/*.csv."""
    out_dir = Path(out_dir)
    runs = load_runs(run_dirs)
    tables = build_tables(runs, target_acc)
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(out_dir / "tables" / f"{name}.csv", index=False)
    figures = make_figures(runs, tables, out_dir / "figures")
    warnings = run_warnings(runs)
    title, head = headline(tables)

    lines = [f"# Report: {len(runs.runs)} run(s)", ""]
    if warnings:
        lines += ["> **Validity warnings — read before the numbers**", ">"]
        lines += [f"> - {w}" for w in warnings]
        lines.append("")
    lines += [
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%SZ')} from: "
        + ", ".join(f"`{d}`" for d in runs.runs["dir"]),
        "",
        "Definitions: a round's latency is the max over ranks of its `total` rows (warm-up "
        "excluded); in-burst = overlaps an applied burst window; quantile q only with "
        "≥ 10/(1−q) rounds, else `max X (n=N)`; [lo, hi] = 95% CI over repeats (t); "
        "paper ratios vs `optireduce` only. Published: "
        f"{100 * PUBLISHED['e2e_reduction_mean']:.1f}% mean / "
        f"{100 * PUBLISHED['e2e_reduction_max']:.1f}% max end-to-end reduction, "
        f"{PUBLISHED['burst_speedup_max']:.2f}× max burst-round speedup.",
        "",
        f"## Headline: {title}",
        "",
        markdown(head),
    ]
    target = tables["training"]["target_acc"].dropna()
    for name, heading in SECTIONS.items():
        if name == "paper":
            continue
        extra = ""
        if name == "training" and len(target):
            extra = f" (target accuracy {target.iloc[0]:.3f})"
        lines += [
            f"## {heading}{extra}",
            "",
            markdown(display(tables[name])),
            f"CSV: [tables/{name}.csv](tables/{name}.csv)",
            "",
        ]
    lines += ["## Figures", ""]
    for name, path in figures.items():
        rel = path.relative_to(out_dir)
        lines += [f"### {FIGURE_TITLES.get(name, name)}", "", f"![{name}]({rel})", ""]
    if not figures:
        lines += ["_(no data to plot)_", ""]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return Report(path, tables, figures, title, head, tuple(warnings))
