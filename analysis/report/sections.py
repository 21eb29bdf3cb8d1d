"""The report's sections: the headline and each table's section, as markdown lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.load import Runs
from analysis.report.columns import Col, markdown, view
from analysis.report.formatting import fmt_pct, fmt_ratio
from analysis.report.prose import phase_sentences, timeout_sentences
from analysis.report.views import (
    ABLATION_VIEW,
    COMPARISON_VIEW,
    LATENCY_VIEW,
    LEFT_OUT_VIEW,
    PAPER_VIEW,
    TIMEOUT_VIEW,
)
from analysis.tables.constants import FAST_EPSILON, PUBLISHED
from analysis.tables.roles import BASELINE, COMPARISONS, PAPER, Cast, comparison_order

#: Paper rows the headline shows; beyond them it shows the rows vs baselines at their defaults.
HEADLINE_ROWS = 8

#: The headline's name of each comparison; its section's title.
SHORT = {"paper": "The paper's comparison", "design": "The design comparison"}
SECTIONS = {
    "paper": "The paper's comparison: its system vs its own baseline",
    "design": "The design comparison: the system vs the design card's baselines",
}
EVENTS_SECTION = "Burst events: the round each one hit, paired by event"
TIMEOUT_SECTION = "A bounded-time baseline's timeout as an axis"
PHASE_SECTION = "Phase ablation: the ε policy, training time and accuracy"
#: What the paper's baseline is, for a report that has no run of it.
PAPER_BASELINE_IS = "a fixed-tolerance bounded-loss transport"


def published() -> str:
    return (
        f"{fmt_pct(PUBLISHED['e2e_reduction_mean'])} mean / "
        f"{fmt_pct(PUBLISHED['e2e_reduction_max'])} max e2e time cut, "
        f"{fmt_ratio(PUBLISHED['event_ratio_max'])} max hit-round ratio"
    )


def headline_comparison(paper: pd.DataFrame) -> str | None:
    """The comparison the headline shows: the paper's if it has rows, else the design's."""
    present = [c for c in COMPARISONS if (paper["comparison"] == c).any()]
    return present[0] if present else None


def headline_rows(paper: pd.DataFrame, cast: Cast) -> pd.DataFrame:
    """The headline comparison's rows on the first screen: all of them when few, else those
    vs a baseline at its defaults (a label that is its transport's name: a timeout sweep has
    a row per timeout; they are in their own section)."""
    rows = paper[paper["comparison"] == headline_comparison(paper)]
    if len(rows) <= HEADLINE_ROWS:
        return rows
    main = rows[rows["baseline"].isin(cast.transports.index)]
    return main if not main.empty else rows


def headline(tables: dict[str, pd.DataFrame], cast: Cast) -> tuple[str, pd.DataFrame]:
    """The terminal's table: the paper's statistics in the paper's comparison if it has rows,
    else in the design's, else round latency per transport."""
    paper = tables["paper"]
    shown = headline_comparison(paper)
    if shown is not None:
        said = f"published: {published()}" if shown == PAPER else _no_paper_baseline(cast)
        return (
            f"{SHORT[shown]} ({said})",
            view(
                headline_rows(paper, cast),
                (Col("workload", "workload"), *PAPER_VIEW),
                drop_empty=False,
            ),
        )
    lat = tables["latency"]
    cols = (Col("workload", "workload"), *LATENCY_VIEW)
    return "Round latency per transport (ms)", view(lat, cols) if not lat.empty else lat


def _no_paper_baseline(cast: Cast) -> str:
    if cast.has(PAPER, BASELINE):
        return "no paper-comparison rows: the published figures stand beside none of these"
    return f"no runs of the paper's baseline, {PAPER_BASELINE_IS}"


def comparison_sections(paper: pd.DataFrame, cast: Cast, headline_shown: int) -> list[str]:
    """A section per comparison: its rows of the paper's statistics, or why it has none; none
    for the headline's comparison when the headline shows all its rows."""
    lines = []
    shown = headline_comparison(paper)
    for c in COMPARISONS:
        rows = paper[paper["comparison"] == c]
        if not rows.empty and c == shown and headline_shown == len(rows):
            continue  # the headline shows every row
        lines += [f"## {SECTIONS[c]}", ""]
        if c == PAPER:
            lines += [f"Published ({published()}), for this comparison only.", ""]
        if rows.empty:
            lines += [
                (
                    f"_No runs of the paper's baseline ({PAPER_BASELINE_IS}): nothing here "
                    "stands beside the published figures._"
                    if c == PAPER and not cast.has(PAPER, BASELINE)
                    else "_No run pairs this comparison's system with its baseline under a "
                    "preset that impairs the network._"
                ),
                "",
            ]
        else:
            lines += by_workload(rows, PAPER_VIEW, ["preset", "label", "baseline"])
            lines += ["CSV: [tables/paper.csv](tables/paper.csv)", ""]
    return lines


def anchor(title: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to -."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _sections(df: pd.DataFrame, by: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    if df.empty:
        return []
    return [(k if isinstance(k, tuple) else (k,), g) for k, g in df.groupby(by, sort=True)]


def by_workload(df: pd.DataFrame, cols: Sequence[Col], sort: list[str]) -> list[str]:
    """A sub-table per workload (only titled when there are several)."""
    parts = _sections(df, ["workload"])
    if not parts:
        return [markdown(pd.DataFrame())]
    lines = []
    for (workload,), g in parts:
        if len(parts) > 1:
            lines += [f"### {workload}", ""]
        lines.append(markdown(view(g.sort_values(sort), cols)))
    return lines


def _baseline_order(comp: pd.DataFrame) -> list[tuple[str, str]]:
    """(comparison, baseline) pairs: the paper's comparison first, then the design's; within
    one, baselines by label."""
    bases = comp[["comparison", "baseline"]].drop_duplicates()
    bases = bases.assign(_o=comparison_order(bases["comparison"]))
    return list(
        bases.sort_values(["_o", "baseline"])[["comparison", "baseline"]].itertuples(
            index=False, name=None
        )
    )


def comparison_tables(comp: pd.DataFrame) -> list[str]:
    """A sub-table per (workload, comparison, baseline): who is faster than that baseline, by
    how much."""
    if comp.empty:
        return [markdown(comp)]
    lines = []
    for workload, w in comp.groupby("workload"):
        for comparison, base in _baseline_order(w):
            g = w[(w["comparison"] == comparison) & (w["baseline"] == base)]
            g = g.sort_values(["preset", "label"])
            lines += [f"### {workload}: each transport vs `{base}` ({comparison} comparison)", ""]
            lines.append(markdown(view(g, COMPARISON_VIEW)))
    return lines


def timeout_section(axis: pd.DataFrame, figure: Path | None, out_dir: Path) -> list[str]:
    """The baseline's timeout as an axis: table, the generated sentences, the figure."""
    if axis.empty:
        return []
    lines = [f"## {TIMEOUT_SECTION}", ""]
    lines += [
        f'The paper\'s "up to {fmt_ratio(PUBLISHED["event_ratio_max"])}" depends on how long '
        "the baseline waits: a bounded-time baseline in its fixed mode "
        "at a hard timeout of X × its calibrated burst-free round (t_max / p50 as played, "
        "from run.json; median over the label's runs), and in its adaptive mode at its "
        "effective timeout, the median round a burst hit over that p50. Ratios per burst "
        "event as under [Burst events](#" + anchor(EVENTS_SECTION) + ").",
        "",
    ]
    lines += [f"- {t}" for t in timeout_sentences(axis)] + [""]
    lines += by_workload(axis, TIMEOUT_VIEW, ["preset", "label", "mode", "timeout_x"])
    lines += ["CSV: [tables/timeout_axis.csv](tables/timeout_axis.csv)", ""]
    if figure is not None:
        lines += [f"![timeout_axis]({figure.relative_to(out_dir)})", ""]
    return lines


def _exact(ablation: pd.DataFrame) -> str:
    """The exact reference(s) the ablation's Δ accuracy is taken against, as text."""
    refs = sorted(r for r in ablation["exact_baseline"].unique() if r)
    return ", ".join(f"`{r}`" for r in refs) or "none ran"


def phase_section(ablation: pd.DataFrame) -> list[str]:
    if ablation.empty:
        return []
    lines = [f"## {PHASE_SECTION}", ""]
    lines += [
        "A phase-aware transport's loss tolerance ε per policy, on the training runs, beside "
        "the other transports: phase-aware ε (exact in critical phases, ε_stable in stable "
        "ones) against ε pinned for the whole run. Times, accuracy and loss are mean [95% CI] "
        f"over seeds; Δ accuracy is paired by seed against the exact reference "
        f"({_exact(ablation)}); the time ratio is paired by seed against the run with ε "
        "pinned at "
        f"{FAST_EPSILON:g}; rounds in critical phase as the phase detector labelled them (it "
        "labels them with phase off too).",
        "",
    ]
    lines += [f"- {t}" for t in phase_sentences(ablation)]
    lines += [""]
    lines += by_workload(ablation, ABLATION_VIEW, [])
    lines += ["CSV: [tables/phase_ablation.csv](tables/phase_ablation.csv)", ""]
    return lines


def left_out_section(runs: Runs, per_run: pd.DataFrame) -> list[str]:
    left = runs.left_out()
    if left.empty:
        return []
    cols = ["run_id", "rounds", "steps", "train_s", "final_acc"]
    left = left.merge(per_run[cols], on="run_id", how="left")
    return [
        "## Runs not aggregated",
        "",
        "These runs are in no mean, CI, comparison or figure: what they measured (before they "
        "stopped, for a run that did not finish) is below and in `tables/runs.csv` (one row "
        "per run, with its status)."
        + (
            " Status `unfaithful`: the run finished, but the emulator could not keep up, so "
            "`testbed report` leaves it out unless given `--include-unfaithful`."
            if (left["status"] == "unfaithful").any()
            else ""
        ),
        "",
        markdown(view(left, LEFT_OUT_VIEW)),
    ]
