"""report.md from its sections, beside tables/*.csv and figures/*.png."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.figures import make_figures
from analysis.load import load_runs
from analysis.report.columns import markdown, view
from analysis.report.formatting import fmt_ratio
from analysis.report.paper_section import paper_tables_section
from analysis.report.prose import definitions, null_sentences
from analysis.report.sections import (
    EVENTS_SECTION,
    SECTIONS,
    anchor,
    by_workload,
    comparison_sections,
    comparison_tables,
    headline,
    headline_comparison,
    left_out_section,
    phase_section,
    timeout_section,
)
from analysis.report.validity import dilation_line, run_warnings, validity_section
from analysis.report.views import (
    EVENT_VIEW,
    LATENCY_VIEW,
    LOSS_VIEW,
    PROBE_VIEW,
    TRAINING_VIEW,
)
from analysis.tables import build_tables
from analysis.tables.constants import PUBLISHED
from analysis.tables.roles import Cast

#: Figures shown in their own section rather than under Figures.
INLINE_FIGURES = ("timeout_axis",)

FIGURE_TITLES = {
    "latency_cdf": "Round-latency CDF, one panel per workload",
    "latency_timeline": "Round latency over time, bursts marked",
    "accuracy_vs_time": "Test accuracy vs emulated time",
    "epsilon_loss": "ε and delivered loss over training",
    "headline_ratios": "The paper's statistics in the headline's comparison, per workload",
}


@dataclass(frozen=True)
class Report:
    path: Path
    tables: dict[str, pd.DataFrame]
    figures: dict[str, Path]
    headline_title: str
    headline: pd.DataFrame  # display strings
    warnings: tuple[str, ...]  # the summary block's lines, one per kind of problem


def source_name(run_dir: str | Path, out_dir: Path) -> str:
    """A run folder as the report names it: relative to the report when it lies beneath it, so
    the same runs give the same bytes from any checkout (no clock, no absolute path)."""
    rel = os.path.relpath(Path(run_dir).resolve(), out_dir.resolve())
    return str(run_dir) if rel.startswith("..") else rel


def write_report(
    run_dirs: Sequence[Path],
    out_dir: Path,
    target_acc: float | None = None,
    include_unfaithful: bool = True,
) -> Report:
    """Load the runs, build tables and figures, write out_dir/report.md and tables/*.csv;
    `include_unfaithful` False leaves unfaithful runs out of every aggregate (listed apart)."""
    out_dir = Path(out_dir)
    runs = load_runs(run_dirs, include_unfaithful)
    tables = build_tables(runs, target_acc)
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(out_dir / "tables" / f"{name}.csv", index=False)
    figures = make_figures(runs.aggregated(), tables, out_dir / "figures")
    warnings = run_warnings(runs)
    cast = Cast.of(runs.runs)
    title, head = headline(tables, cast)

    n, n_ok = len(runs.runs), len(runs.aggregated().runs)
    kept = "status ok" if include_unfaithful else "status ok and faithful"
    counts = ", ".join(f"{k} {w}" for w, k in runs.runs["workload"].value_counts().items())
    lines = [f"# Report: {n} run(s)", "", f"{counts}; {n_ok} of {n} aggregated ({kept}).", ""]
    if warnings:
        lines += ["> **Validity — read before the numbers**", ">"]
        lines += [f"> - {w}" for w in warnings]
        lines += [">", "> Details per run: [Validity](#validity).", ""]
    lines += [f"## Headline: {title}", "", dilation_line(runs), "", markdown(head)]
    paper = tables["paper"]
    shown = headline_comparison(paper)
    n_shown = int((paper["comparison"] == shown).sum()) if shown else 0
    if shown and len(head) < n_shown:
        lines += [
            f"Rows vs each baseline at its defaults only; all {n_shown} rows, one per "
            f"baseline label: [{SECTIONS[shown]}](#{anchor(SECTIONS[shown])}).",
            "",
        ]
    if n_ok == 0:
        lines += [
            f"_No run finished with {kept}, so nothing is aggregated: each run's partial "
            "measurements are under [Runs not aggregated](#runs-not-aggregated)._",
            "",
        ]
    lines += [definitions(tables["training"]), ""]

    lines += ["## Round latency in and outside bursts (ms, max over ranks)", ""]
    lines += by_workload(tables["latency"], LATENCY_VIEW, ["preset", "label"])
    lines += ["CSV: [tables/latency.csv](tables/latency.csv)", ""]
    lines += comparison_sections(paper, cast, len(head) if shown else 0)
    lines += ["## Comparisons, grouped by baseline", ""]
    lines += [
        "In-burst mean ratio = the baseline's mean in-burst round latency / the transport's "
        "(a ratio of means over all in-burst rounds, not the paper's per-event statistic: "
        f"that is under [Burst events](#{anchor(EVENTS_SECTION)})); "
        "time cuts = 1 − the transport's time / the baseline's; Δ accuracy in percentage "
        "points.",
        "",
    ]
    lines += comparison_tables(tables["comparisons"])
    lines += ["CSV: [tables/comparisons.csv](tables/comparisons.csv)", ""]
    lines += [f"## {EVENTS_SECTION}", ""]
    lines += [
        "The paper's single-round statistic: for every burst event, the latency of the round it "
        "hit (the slowest round overlapping the event) under the baseline over under the "
        "transport, paired by event on the same seed and repeat; median, p90 and max over "
        f"events (the paper's {fmt_ratio(PUBLISHED['event_ratio_max'])} is a max), each with "
        "a 95% bootstrap interval that resamples seeds, not events (seeded, so the report is "
        "reproducible; with 3 seeds it is coarse, and a max's upper end is the max itself). "
        "The null applies the same pairing to burst-free rounds (the baseline's calm round over "
        "the transport's calm round of the same index on the same seed) and takes the same "
        "statistic over as many of them per seed as there were events, 2000 times: its p95 is "
        "the null beside each ratio (a max over 14 events against the max of 14 calm pairs). "
        "A ratio is an effect only above its null. "
        "The calm-round ratio beside them is the ratio of calm-round medians. With "
        "bursts more frequent than rounds, one round can be hit by several events.",
        "",
    ]
    lines += [f"- {t}" for t in null_sentences(tables["paper"])] + [""]
    lines += by_workload(
        tables["events"], EVENT_VIEW, ["comparison", "preset", "baseline", "label"]
    )
    lines += ["CSV: [tables/events.csv](tables/events.csv)", ""]
    lines += paper_tables_section(tables)
    lines += timeout_section(tables["timeout_axis"], figures.get("timeout_axis"), out_dir)
    lines += ["## Training time and accuracy", ""]
    lines += by_workload(tables["training"], TRAINING_VIEW, ["preset", "label"])
    lines += ["CSV: [tables/training.csv](tables/training.csv)", ""]
    lines += phase_section(tables["phase_ablation"])
    lines += ["## Delivered loss, repairs and bursts", ""]
    lines += by_workload(tables["loss"], LOSS_VIEW, ["preset", "label"])
    lines += ["CSV: [tables/loss.csv](tables/loss.csv)", ""]
    if not tables["probes"].empty:
        lines += ["## Probe workloads (iperf3 / ping) in and outside bursts", ""]
        lines += [markdown(view(tables["probes"], PROBE_VIEW))]
        lines += ["CSV: [tables/probes.csv](tables/probes.csv)", ""]

    lines += ["## Figures", ""]
    for name, path in figures.items():
        if name in INLINE_FIGURES:
            continue
        rel = path.relative_to(out_dir)
        lines += [f"### {FIGURE_TITLES.get(name, name)}", "", f"![{name}]({rel})", ""]
    if not figures:
        lines += ["_(no data to plot)_", ""]

    lines += left_out_section(runs, tables["runs"])
    lines += validity_section(runs, tables)
    lines += [
        "## Sources",
        "",
        "Generated from: " + ", ".join(f"`{source_name(d, out_dir)}`" for d in runs.runs["dir"]),
        "",
        "Per-run measurements: [tables/runs.csv](tables/runs.csv); the paper's statistics: "
        "[tables/paper.csv](tables/paper.csv).",
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return Report(path, tables, figures, title, head, tuple(warnings))
