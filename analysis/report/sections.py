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
from analysis.tables.constants import FAST_EPSILON, PAPER_BASELINE, PUBLISHED

#: Paper rows the headline shows; beyond them it shows the rows vs `optireduce` only.
HEADLINE_ROWS = 8

PAPER_SECTION = "The paper's statistics vs every optireduce baseline"
EVENTS_SECTION = "Burst events: the round each one hit, paired by event"
TIMEOUT_SECTION = "optireduce's timeout as an axis"
PHASE_SECTION = "Phase ablation: dblp's ε policy, training time and accuracy"


def headline_rows(paper: pd.DataFrame) -> pd.DataFrame:
    """The paper rows on the first screen: all of them when few, else those vs the adaptive
    `optireduce` (a timeout sweep has a row per timeout; they are in their own section)."""
    if len(paper) <= HEADLINE_ROWS:
        return paper
    main = paper[paper["baseline"] == PAPER_BASELINE]
    return main if not main.empty else paper


def headline(tables: dict[str, pd.DataFrame]) -> tuple[str, pd.DataFrame]:
    """The terminal's table: the paper's statistics if there is an optireduce baseline, else
    round latency per transport."""
    paper = tables["paper"]
    if not paper.empty:
        return (
            f"Paper's statistics vs {PAPER_BASELINE} (published: "
            f"{fmt_pct(PUBLISHED['e2e_reduction_mean'])} mean / "
            f"{fmt_pct(PUBLISHED['e2e_reduction_max'])} max e2e time cut, "
            f"{fmt_ratio(PUBLISHED['event_ratio_max'])} max hit-round ratio)",
            view(
                headline_rows(paper), (Col("workload", "workload"), *PAPER_VIEW), drop_empty=False
            ),
        )
    lat = tables["latency"]
    cols = (Col("workload", "workload"), *LATENCY_VIEW)
    return "Round latency per transport (ms)", view(lat, cols) if not lat.empty else lat


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


def _baseline_order(comp: pd.DataFrame) -> list[str]:
    """The paper's baseline (optireduce labels) first, then the others (tcp labels)."""
    bases = comp[["baseline", "baseline_transport"]].drop_duplicates()
    bases = bases.assign(first=bases["baseline_transport"] != PAPER_BASELINE)
    return list(bases.sort_values(["first", "baseline"])["baseline"])


def comparison_tables(comp: pd.DataFrame) -> list[str]:
    """A sub-table per (workload, baseline): who is faster than that baseline, by how much."""
    if comp.empty:
        return [markdown(comp)]
    lines = []
    for workload, w in comp.groupby("workload"):
        for base in _baseline_order(w):
            g = w[w["baseline"] == base].sort_values(["preset", "label"])
            lines += [f"### {workload}: each transport vs `{base}`", ""]
            lines.append(markdown(view(g, COMPARISON_VIEW)))
    return lines


def timeout_section(axis: pd.DataFrame, figure: Path | None, out_dir: Path) -> list[str]:
    """The baseline's timeout as an axis: table, the generated sentences, the figure."""
    if axis.empty:
        return []
    lines = [f"## {TIMEOUT_SECTION}", ""]
    lines += [
        f'The paper\'s "up to {fmt_ratio(PUBLISHED["event_ratio_max"])}" depends on how long '
        "the baseline waits: optireduce fixed "
        "at a hard timeout of X × its calibrated burst-free round (t_max / p50 as played, "
        "from run.json; median over the label's runs), and optireduce adaptive at its "
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
        "dblp's loss tolerance ε per policy, on the training runs, beside the exact transports "
        "and optireduce: phase-aware ε (exact in critical phases, ε_stable in stable ones) "
        "against ε pinned for the whole run. Times, accuracy and loss are mean [95% CI] over "
        f"seeds; Δ accuracy is paired by seed against the exact reference ({_exact(ablation)}); "
        f"the time ratio is paired by seed against the dblp run with ε pinned at "
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
