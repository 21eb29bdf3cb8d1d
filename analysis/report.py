"""report.md for one or many runs: a one-screen headline, tables, figures, then validity.

The first screen is the title, ONE validity block summarising what is wrong with the runs
("23 of 23 runs UNFAITHFUL …, see Validity"), the headline table and a line of definitions.
Tables follow grouped by workload (comparisons by baseline), with units in their headers and
numbers formatted for people; the per-run details (every warning, every left-out run) come
at the end. Each table is also written as CSV under `tables/`: numbers in numeric columns
(NaN for missing), text in text columns.

Only runs with status ok are aggregated; a failed, interrupted or still-running run is
listed under "Runs not aggregated" with its status and reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.fidelity import CALM_BOUND_MAX, LATE_OF_ROUND, SHAM_SHIFT_MAX, UNFAITHFUL_SHARE
from analysis.figures import make_figures
from analysis.load import Runs, load_runs, mixed_specs
from analysis.tables import (
    ADAPTIVE_MODE,
    EXACT_TRANSPORTS,
    FAST_EPSILON,
    PAPER_BASELINE,
    PHASE_AWARE,
    PUBLISHED,
    build_tables,
    rejections_text,
    timeout_reaching,
)

#: Runs named in a summary line before it says "and k more".
NAMED_RUNS = 3
#: Paper rows the headline shows; beyond them it shows the rows vs `optireduce` only.
HEADLINE_ROWS = 8


# ---------------------------------------------------------------------------- formatting


def _nan(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_num(x: object) -> str:
    """A magnitude for people: 12,270 / 576 / 57.1 / 5.73 / 0.0573, never 1.227e+04."""
    if _nan(x):
        return "–"
    v = float(x)
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a >= 0.001:
        return f"{v:.3g}"
    return "<0.001" if v > 0 else ">-0.001"


def fmt_count(x: object) -> str:
    return "–" if _nan(x) else f"{float(x):,.0f}"


def fmt_pct(x: object) -> str:
    """A fraction as a percentage: 0.1298 -> 13.0%; tiny but non-zero -> <0.1%."""
    if _nan(x):
        return "–"
    v = 100.0 * float(x)
    if v != 0 and abs(v) < 0.05:
        return "<0.1%" if v > 0 else ">-0.1%"
    return f"{v:.1f}%"


def fmt_ratio(x: object) -> str:
    return "–" if _nan(x) else f"{float(x):.2f}×"


def fmt_factor(x: object) -> str:
    """A factor as given: 1, 2.5, 8."""
    return "–" if _nan(x) else f"{float(x):g}"


def fmt_acc(x: object) -> str:
    return "–" if _nan(x) else f"{float(x):.3f}"


def fmt_pp(x: object) -> str:
    """A difference of fractions in percentage points: +1.2 pp."""
    return "–" if _nan(x) else f"{100.0 * float(x):+.1f} pp"


def fmt_signed_pct(x: object) -> str:
    """A signed change as a percentage: +2.0%, -6.6%."""
    return "–" if _nan(x) else f"{100.0 * float(x):+.1f}%"


def fmt_yes_no(x: object) -> str:
    return "–" if _nan(x) else "yes" if bool(x) else "**no**"


def fmt_text(x: object) -> str:
    if _nan(x):
        return ""
    if isinstance(x, bool):
        return "yes" if x else ""
    return str(x)


def fmt_quantile(rule_col: str) -> Callable[[object, pd.Series], str]:
    """A quantile cell that says when it is the maximum: "max 576 (n=59)"."""

    def f(x: object, row: pd.Series) -> str:
        rule = str(row.get(rule_col, ""))
        if _nan(x):
            return "–"
        if rule.startswith("max"):
            return f"max {fmt_num(x)} ({rule.removeprefix('max ').strip('()')})"
        return fmt_num(x)

    return f


@dataclass(frozen=True)
class Col:
    """One displayed column: the CSV column it shows, its header (with unit), its format.
    A CSV column with `_lo`/`_hi` siblings shows "x [lo, hi]" when the interval exists."""

    src: str
    head: str
    fmt: Callable[[object], str] = fmt_text
    row_fmt: Callable[[object, pd.Series], str] | None = None


def _cell(col: Col, row: pd.Series) -> str:
    x = row.get(col.src)
    if col.row_fmt is not None:
        return col.row_fmt(x, row)
    s = col.fmt(x)
    lo, hi = row.get(f"{col.src}_lo"), row.get(f"{col.src}_hi")
    if s != "–" and not _nan(lo) and not _nan(hi):
        s += f" [{col.fmt(lo)}, {col.fmt(hi)}]"
    return s


def view(df: pd.DataFrame, cols: Sequence[Col], drop_empty: bool = True) -> pd.DataFrame:
    """Display strings of df's columns under their headers; with drop_empty, a column that
    holds nothing in any row (e.g. time-to-accuracy of an all-reduce) is left out."""
    cols = [c for c in cols if c.src in df.columns]
    out = {c.head: [_cell(c, row) for _, row in df.iterrows()] for c in cols}
    d = pd.DataFrame(out, columns=[c.head for c in cols])
    if drop_empty and not d.empty:
        keep = [h for h in d.columns if not d[h].isin(["–", ""]).all() or h == cols[0].head]
        d = d[keep]
    return d


def markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table of display strings."""
    if df.empty:
        return "_(no rows)_\n"
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in df.values]
    return "\n".join([head, rule, *body]) + "\n"


# ---------------------------------------------------------------------------- views


def _event_ratios(x: object, row: pd.Series) -> str:
    """max / p90 / median of the per-event hit-round ratios in one cell."""
    if _nan(x):
        return "–"
    return " / ".join(fmt_ratio(row[f"event_ratio_{k}"]) for k in ("max", "p90", "median"))


def _events_seeds(x: object, row: pd.Series) -> str:
    """ "36 (3 seeds)": how many paired events a max is the max of, and from how many seeds."""
    if _nan(x):
        return "–"
    seeds = int(row["seeds"])
    return f"{fmt_count(x)} ({seeds} seed{'s' if seeds != 1 else ''})"


TRANSPORT = Col("label", "transport")
PRESET = Col("preset", "burst preset")
RUNS = Col("runs", "runs", fmt_count)
VALIDITY = Col("validity", "validity")


def _per_group(*cols: Col) -> tuple[Col, ...]:
    """A group table's view: transport, preset, runs, the columns, validity."""
    return (TRANSPORT, PRESET, RUNS, *cols, VALIDITY)


def _q(name: str, head: str) -> Col:
    return Col(f"{name}_ms", head, row_fmt=fmt_quantile(f"{name}_rule"))


LATENCY_VIEW = _per_group(
    Col("rounds_in", "rounds in burst", fmt_count),
    _q("p50_in", "p50 in burst (ms)"),
    _q("p99_in", "p99 in burst (ms)"),
    Col("rounds_out", "rounds outside", fmt_count),
    _q("p50_out", "p50 outside (ms)"),
    _q("p99_out", "p99 outside (ms)"),
    Col("max_all_ms", "max (ms)", fmt_num),
)

COMPARISON_VIEW = (
    PRESET,
    TRANSPORT,
    Col("burst_mean_ratio", "in-burst mean ratio (×)", fmt_ratio),
    Col("e2e_reduction", "end-to-end time cut (%)", fmt_pct),
    Col("tta_reduction", "time-to-accuracy cut (%)", fmt_pct),
    Col("acc_delta", "Δ final accuracy (pp)", fmt_pp),
    Col("n", "repeats", fmt_count),
    VALIDITY,
)

EVENT_VIEW = (
    PRESET,
    TRANSPORT,
    Col("baseline", "vs"),
    Col("events", "events (seeds)", row_fmt=_events_seeds),
    Col("event_ratio_median", "hit-round ratio, median (×)", fmt_ratio),
    Col("event_ratio_p90", "p90 (×)", fmt_ratio),
    Col("event_ratio_max", "max (×)", fmt_ratio),
    Col("calm_ratio", "calm-round ratio (×)", fmt_ratio),
)

TRAINING_VIEW = _per_group(
    Col("train_s", "time (s)", fmt_num),
    Col("tta_s", "time to target (s)", fmt_num),
    Col("tta_reached", "reached target (runs)", fmt_count),
    Col("final_acc", "final accuracy", fmt_acc),
    Col("comm_fraction", "communication share (%)", fmt_pct),
)

LOSS_VIEW = _per_group(
    Col("loss_in", "delivered loss in burst (%)", fmt_pct),
    Col("loss_out", "delivered loss outside (%)", fmt_pct),
    Col("nacks_per_run", "NACKs per run", fmt_count),
    Col("retx_per_run", "retransmitted pkts per run", fmt_count),
    Col("cap_hit_frac", "rounds at the cap (%)", fmt_pct),
    Col("replica_drift_max", "replica drift max", fmt_num),
    Col("bursts_per_100_steps", "bursts per 100 steps", fmt_num),
)

PROBE_VIEW = (
    Col("run_id", "run"),
    Col("probe", "probe"),
    PRESET,
    Col("bins", "bins", fmt_count),
    Col("bins_in_burst", "bins in burst", fmt_count),
    Col("mbps_in", "Mbit/s in burst", fmt_num),
    Col("mbps_out", "Mbit/s outside", fmt_num),
    Col("loss_in", "loss in burst (%)", fmt_pct),
    Col("loss_out", "loss outside (%)", fmt_pct),
    Col("rtt_ms_in", "RTT in burst (ms)", fmt_num),
    Col("rtt_ms_out", "RTT outside (ms)", fmt_num),
)


def fmt_multiple(x: object) -> str:
    """A multiple of the calm round: 1.5×, 4×, 2.01×."""
    return "–" if _nan(x) else f"{float(x):.3g}×"


def _timeout_cell(x: object, row: pd.Series) -> str:
    """A fixed timeout as its multiple; the adaptive mode by name, with its effective one."""
    if row.get("mode") == ADAPTIVE_MODE:
        return f"adaptive (≈{fmt_multiple(x)} effective)"
    return fmt_multiple(x)


TIMEOUT_VIEW = (
    PRESET,
    Col("label", "system"),
    Col("baseline", "vs"),
    Col("timeout_x", "optireduce timeout (× calm p50)", row_fmt=_timeout_cell),
    Col("cap_x", "hard cap (× calm p50)", fmt_multiple),
    Col("hit_x", "its median hit round (× calm p50)", fmt_multiple),
    Col("event_ratio_max", "hit-round ratio max / p90 / median (×)", row_fmt=_event_ratios),
    Col("calm_ratio", "calm-round ratio (×)", fmt_ratio),
    Col("events", "events (seeds)", row_fmt=_events_seeds),
)


def _policy_cell(x: object, row: pd.Series) -> str:
    """dblp's ε policy; what the other transports do with loss instead."""
    if fmt_text(x):
        return fmt_text(x)
    return "exact (no ε)" if row["transport"] in EXACT_TRANSPORTS else "timeout (no ε)"


ABLATION_VIEW = (
    PRESET,
    TRANSPORT,
    Col("eps_policy", "ε policy", row_fmt=_policy_cell),
    RUNS,
    Col("train_s", "training time (s)", fmt_num),
    Col("time_vs_fast", f"time / ε pinned at {FAST_EPSILON:g} (×)", fmt_ratio),
    Col("tta_s", "time to target (s)", fmt_num),
    Col("final_acc", "final accuracy", fmt_acc),
    Col("acc_delta", "Δ accuracy vs exact (pp)", fmt_pp),
    Col("loss_mean", "delivered loss, mean (%)", fmt_pct),
    Col("critical_share", "rounds in critical phase (%)", fmt_pct),
    Col("eps_mean", "mean ε", fmt_acc),
    VALIDITY,
)

PAPER_VIEW = (
    PRESET,
    Col("label", "system"),
    Col("baseline", "vs"),
    Col("e2e_reduction", "e2e time cut, mean (%)", fmt_pct),
    Col("e2e_reduction_max", "e2e time cut, max over seeds (%)", fmt_pct),
    Col("n", "repeats", fmt_count),
    Col("acc_delta", "Δ final accuracy (pp)", fmt_pp),
    Col("event_ratio_max", "hit-round ratio max / p90 / median (×)", row_fmt=_event_ratios),
    Col("calm_ratio", "calm-round ratio (×)", fmt_ratio),
    Col("events", "events (seeds)", row_fmt=_events_seeds),
    VALIDITY,
)

VALIDITY_VIEW = (
    Col("run_id", "run"),
    Col("workload", "workload"),
    TRANSPORT,
    PRESET,
    Col("repeat", "repeat", fmt_count),
    Col("status", "status"),
    Col("unfaithful", "unfaithful", fmt_text),
    Col("dilation", "dilation D", fmt_factor),
    Col("oversubscribed", "oversubscribed", fmt_text),
    Col("cpu_wait_share", "CPU wait / round, median (%)", fmt_pct),
    Col("rejected", "rejected datagrams", fmt_count),
    Col("rejections", "rejected by reason"),
    Col("warnings", "warnings"),
)

SHAM_VIEW = (
    Col("workload", "workload"),
    TRANSPORT,
    Col("seeds", "seeds", fmt_count),
    Col("none_p50_ms", "calm p50, none (ms)", fmt_num),
    Col("sham_p50_ms", "calm p50, sham (ms)", fmt_num),
    Col("shift", "sham − none (%)", fmt_signed_pct),
    Col("faithful", f"within ±{SHAM_SHIFT_MAX:.0%}", fmt_yes_no),
)

LEFT_OUT_VIEW = (
    Col("run_id", "run"),
    Col("workload", "workload"),
    TRANSPORT,
    PRESET,
    Col("repeat", "repeat", fmt_count),
    Col("status", "status"),
    Col("reason", "reason"),
    Col("rounds", "rounds", fmt_count),
    Col("steps", "steps", fmt_count),
    Col("train_s", "time so far (s)", fmt_num),
    Col("final_acc", "last accuracy", fmt_acc),
)

PAPER_SECTION = "The paper's statistics vs every optireduce baseline"
EVENTS_SECTION = "Burst events: the round each one hit, paired by event"
TIMEOUT_SECTION = "optireduce's timeout as an axis"
PHASE_SECTION = "Phase ablation: dblp's ε policy, training time and accuracy"

#: Figures shown in their own section rather than under Figures.
INLINE_FIGURES = ("timeout_axis",)

FIGURE_TITLES = {
    "latency_cdf": "Round-latency CDF, one panel per workload",
    "latency_timeline": "Round latency over time, bursts marked",
    "accuracy_vs_time": "Test accuracy vs wall time",
    "epsilon_loss": "ε and delivered loss over training",
    "headline_ratios": "The paper's statistics vs optireduce labels",
}


@dataclass(frozen=True)
class Report:
    path: Path
    tables: dict[str, pd.DataFrame]
    figures: dict[str, Path]
    headline_title: str
    headline: pd.DataFrame  # display strings
    warnings: tuple[str, ...]  # the summary block's lines, one per kind of problem


# ---------------------------------------------------------------------------- validity


def _names(ids: Sequence[str], limit: int = NAMED_RUNS) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _other_warnings(warnings: str) -> list[str]:
    """A run's orchestrator warnings the flags do not already say (unfaithful, oversubscribed)."""
    said = ("unfaithful", "oversubscribed")
    return [w for w in warnings.split("; ") if w and not w.startswith(said)]


def run_warnings(runs: Runs) -> list[str]:
    """The validity summary: one line per kind of problem, counting the runs it affects
    ("23 of 23 runs UNFAITHFUL …"), naming them when they are few. Per-run details are in the
    report's Validity section."""
    r = runs.runs
    n = len(r)
    out = []

    def of(mask: pd.Series) -> tuple[int, list[str]]:
        return int(mask.sum()), list(r.loc[mask, "run_id"])

    for status in ("failed", "interrupted", "running"):
        k, ids = of(r["status"] == status)
        if k:
            why = r.loc[r["status"] == status, "reason"].tolist()
            named = ", ".join(
                f"`{i}`" + (f": {w}" if w else "")
                for i, w in zip(ids[:NAMED_RUNS], why, strict=False)
            )
            more = f" and {k - NAMED_RUNS} more" if k > NAMED_RUNS else ""
            state = "still RUNNING" if status == "running" else status.upper()
            out.append(f"{k} of {n} runs {state}, not aggregated (partial data): {named}{more}")
    k, ids = of(r["unfaithful"].astype(bool))
    if k:
        out.append(
            f"{k} of {n} runs UNFAITHFUL: the emulator's CPU distorted their timing (the "
            "transport loop woke late, or calm rounds could not keep the pacing rate), so their "
            "latencies measure the CPU as well as the network"
            + ("" if k == n else f" ({_names(ids)})")
        )
    k, ids = of(r["oversubscribed"].astype(bool))
    if k:
        out.append(
            f"{k} of {n} runs oversubscribed (more workers than cores)"
            + ("" if k == n else f" ({_names(ids)})")
        )
    k, ids = of(r["rejected"] > 0)
    if k:
        total = int(r["rejected"].sum())
        per = "; ".join(
            f"`{i}` {int(x):,} ({rejections_text(d)})"
            for i, x, d in r.loc[r["rejected"] > 0, ["run_id", "rejected", "rejections"]]
            .head(NAMED_RUNS)
            .itertuples(index=False)
        )
        more = f" and {k - NAMED_RUNS} more" if k > NAMED_RUNS else ""
        out.append(
            f"{total:,} datagrams rejected by the transport (spoofed, foreign or non-finite) "
            f"in {k} of {n} runs: {per}{more}"
        )
    with_rows = set(runs.rounds["run_id"]) | set(runs.probes["run_id"])
    k, ids = of(~r["run_id"].isin(with_rows))
    if k:
        out.append(f"{k} of {n} runs have no rounds recorded ({_names(ids)})")
    k, ids = of(r["warnings"].map(lambda w: bool(_other_warnings(w))))
    if k:
        out.append(f"{k} of {n} runs carry other warnings ({_names(ids)})")
    mixed = mixed_specs(runs)
    if mixed:
        out.append(
            f"{len(mixed)} group(s) mix specs, so their repeats are not one experiment: "
            + "; ".join(mixed)
        )
    return out


def dilation_line(runs: Runs) -> str:
    """What time dilation the runs ran at, said beside the tables (their times are emulated)."""
    d = runs.runs["dilation"]
    if d.empty:
        return ""
    lo, hi = float(d.min()), float(d.max())
    if hi == 1:
        return "Time dilation: none (D = 1 in every run)."
    each = f"D = {fmt_factor(lo)}"
    if hi != lo:
        each += f"–{fmt_factor(hi)} (per run under [Validity](#validity))"
    return (
        f"Time dilation: {each}: the emulated network ran D× slower; every time in these "
        "tables is emulated (undilated)."
    )


def _validity_section(runs: Runs, tables: dict[str, pd.DataFrame]) -> list[str]:
    lines = [
        "## Validity",
        "",
        f"A run is **unfaithful** when more than {UNFAITHFUL_SHARE:.0%} of its rounds saw the "
        "transport's event loop wake later than max(one idle gap, "
        f"{LATE_OF_ROUND:.0%} of the round) after its timer, or its calm rounds ran slower "
        f"than {CALM_BOUND_MAX}x their pacing bound (the emulator did not keep up; the median "
        "CPU wait per round is shown but is not the verdict); **rejected datagrams** are "
        "those the transport refused (wrong job token, a "
        "source that is not the rank the header names, non-finite values): someone else was "
        "sending into the job. Only runs with status ok are aggregated.",
        "",
        markdown(view(tables["validity"], VALIDITY_VIEW)),
        "CSV: [tables/validity.csv](tables/validity.csv)",
        "",
    ]
    sham = tables["sham_shift"]
    if not sham.empty:
        lines += [
            "### The sham control: the bursts' CPU cost alone",
            "",
            "The `sham` control plays the burst schedule's machinery without impairing the "
            "network: its calm-round p50 against `none`'s (same transport, workload and seed) "
            "is what the bursts' CPU cost alone does to latency. A shift beyond "
            f"±{SHAM_SHIFT_MAX:.0%} says the emulator's own work moves the numbers.",
            "",
            markdown(view(sham, SHAM_VIEW)),
            "CSV: [tables/sham_shift.csv](tables/sham_shift.csv)",
            "",
        ]
    mixed = mixed_specs(runs)
    if mixed:
        lines += ["Groups whose runs differ in more than the seed:", ""]
        lines += [f"- {m}" for m in mixed] + [""]
    return lines


# ---------------------------------------------------------------------------- report


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


def _anchor(title: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to -."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _sections(df: pd.DataFrame, by: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    if df.empty:
        return []
    return [(k if isinstance(k, tuple) else (k,), g) for k, g in df.groupby(by, sort=True)]


def _by_workload(df: pd.DataFrame, cols: Sequence[Col], sort: list[str]) -> list[str]:
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


def _comparisons(comp: pd.DataFrame) -> list[str]:
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


def timeout_sentences(axis: pd.DataFrame) -> list[str]:
    """Per (workload, preset, system) of the timeout axis: at which fixed timeout the
    per-event max reaches the published figure here, or that it does not in the swept range."""
    level = PUBLISHED["event_ratio_max"]
    out = []
    for r in timeout_reaching(axis, level).itertuples(index=False):
        swept = fmt_multiple(r.swept_lo) + (
            f"–{fmt_multiple(r.swept_hi)}" if r.swept_hi != r.swept_lo else ""
        )
        where = f"{r.workload}, preset {r.preset}: the per-event max of optireduce / {r.label}"
        if _nan(r.reached_x):
            out.append(
                f"{where} does not reach the published {fmt_ratio(level)} within the swept "
                f"timeouts ({swept} the calm p50); its largest is {fmt_ratio(r.best)} at "
                f"{fmt_multiple(r.best_x)}."
            )
        elif r.reached_x == r.swept_lo:
            out.append(
                f"{where} is {fmt_ratio(level)} or more already at the smallest swept timeout, "
                f"{swept.split('–')[0]} the calm p50."
            )
        else:
            out.append(
                f"{where} reaches the published {fmt_ratio(level)} at a fixed timeout of about "
                f"{fmt_multiple(r.reached_x)} the calm p50 (interpolated linearly between the "
                f"swept points; swept {swept})."
            )
    return out


def _timeout_section(axis: pd.DataFrame, figure: Path | None, out_dir: Path) -> list[str]:
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
        "event as under [Burst events](#" + _anchor(EVENTS_SECTION) + ").",
        "",
    ]
    lines += [f"- {t}" for t in timeout_sentences(axis)] + [""]
    lines += _by_workload(axis, TIMEOUT_VIEW, ["preset", "label", "mode", "timeout_x"])
    lines += ["CSV: [tables/timeout_axis.csv](tables/timeout_axis.csv)", ""]
    if figure is not None:
        lines += [f"![timeout_axis]({figure.relative_to(out_dir)})", ""]
    return lines


def _relation(x: float, lo: float, hi: float) -> str:
    """Where x lies against [lo, hi]."""
    return "below" if x < lo else "above" if x > hi else "within"


def _time_verdict(r: float, lo: float, hi: float) -> str:
    """Phase-aware dblp's training time against the pinned run's, from their paired ratio."""
    if _nan(lo) or _nan(hi):
        return "reached" if r <= 1 else "did not reach"
    if hi < 1:
        return "beat"
    return "matched (no difference at 95%)" if lo <= 1 else "did not reach"


def phase_sentences(ablation: pd.DataFrame) -> list[str]:
    """Per (workload, preset): did phase-aware dblp reach the training time of ε pinned at
    FAST_EPSILON while keeping its final accuracy within the 95% CI of the exact transports?"""
    out = []
    for (workload, preset), g in ablation.groupby(["workload", "preset"]):
        aware = g[(g["eps_policy"] == PHASE_AWARE) & g["time_vs_fast"].notna()]
        fast = g[np.isclose(g["pinned_eps"].astype(float), FAST_EPSILON)]
        if aware.empty or fast.empty:
            continue
        a, f = aware.iloc[0], fast.iloc[0]
        r, lo, hi = a["time_vs_fast"], a["time_vs_fast_lo"], a["time_vs_fast_hi"]
        spread = " (one seed, no interval)" if _nan(lo) else f" [{fmt_ratio(lo)}, {fmt_ratio(hi)}]"
        said = (
            f"{workload}, preset {preset}: phase-aware `{a['label']}` {_time_verdict(r, lo, hi)} "
            f"the training time of `{f['label']}` (ε pinned at {FAST_EPSILON:g}): "
            f"{fmt_num(a['train_s'])} s vs {fmt_num(f['train_s'])} s, ratio {fmt_ratio(r)}{spread}"
        )
        acc, accs = a["final_acc"], []
        for ref in g[g["transport"].isin(EXACT_TRANSPORTS)].itertuples(index=False):
            lo, hi = ref.final_acc_lo, ref.final_acc_hi
            if _nan(lo) or _nan(hi):
                where = _relation(acc, ref.final_acc, ref.final_acc).replace("within", "equal to")
                accs.append(f"{where} `{ref.label}`'s {fmt_acc(ref.final_acc)} (one seed)")
            else:
                where = _relation(acc, lo, hi)
                accs.append(f"{where} `{ref.label}`'s 95% CI [{fmt_acc(lo)}, {fmt_acc(hi)}]")
        if accs:
            said += f"; its final accuracy {fmt_acc(acc)} is " + " and ".join(accs)
        out.append(said + ".")
    return out


def _exact(ablation: pd.DataFrame) -> str:
    """The exact reference(s) the ablation's Δ accuracy is taken against, as text."""
    refs = sorted(r for r in ablation["exact_baseline"].unique() if r)
    return ", ".join(f"`{r}`" for r in refs) or "none ran"


def _phase_section(ablation: pd.DataFrame) -> list[str]:
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
    lines += _by_workload(ablation, ABLATION_VIEW, [])
    lines += ["CSV: [tables/phase_ablation.csv](tables/phase_ablation.csv)", ""]
    return lines


def _left_out_section(runs: Runs, per_run: pd.DataFrame) -> list[str]:
    left = runs.left_out()
    if left.empty:
        return []
    cols = ["run_id", "rounds", "steps", "train_s", "final_acc"]
    left = left.merge(per_run[cols], on="run_id", how="left")
    return [
        "## Runs not aggregated",
        "",
        "These runs did not finish: what they measured before they stopped is below and in "
        "`tables/runs.csv` (one row per run, with its status), and in no mean, CI, comparison "
        "or figure.",
        "",
        markdown(view(left, LEFT_OUT_VIEW)),
    ]


def _definitions(training: pd.DataFrame) -> str:
    target = training["target_acc"].dropna() if "target_acc" in training else []
    tgt = (
        f" Time to target: first evaluation ≥ {target.iloc[0]:.3f} accuracy." if len(target) else ""
    )
    return (
        "Definitions: a round's latency is the max over ranks (warm-up excluded); in burst = "
        "overlaps an applied burst window; a quantile q needs ≥ 10/(1−q) rounds, else the "
        "table shows the max and says so (`max X (n=N)`; the CSV's `*_rule` column); "
        "[lo, hi] = 95% t-interval over repeats, shown only with ≥ 2 repeats; e2e time cut = "
        "1 − the system's training time / the baseline's, mean over repeats per preset and max "
        "over the seeds, paired by seed (the "
        f"paper's {fmt_pct(PUBLISHED['e2e_reduction_mean'])} mean and "
        f"{fmt_pct(PUBLISHED['e2e_reduction_max'])} max are over its own settings); Δ final "
        "accuracy = the system's minus the baseline's, in points; hit-round "
        "ratio = per burst event, the latency of the round it hit under the baseline over "
        "under the system, paired by event on the same seed: max / p90 / median over events "
        f"(the paper's {fmt_ratio(PUBLISHED['event_ratio_max'])} is such a max; a max has no "
        "confidence interval, so the events and "
        f"seeds it is the max of are given); ratios in the headline are vs `{PAPER_BASELINE}` "
        "labels only, on presets that impair the network; only runs with status ok are "
        "aggregated." + tgt
    )


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
    figures = make_figures(runs.aggregated(), tables, out_dir / "figures")
    warnings = run_warnings(runs)
    title, head = headline(tables)

    n, n_ok = len(runs.runs), int((runs.runs["status"] == "ok").sum())
    counts = ", ".join(f"{k} {w}" for w, k in runs.runs["workload"].value_counts().items())
    lines = [f"# Report: {n} run(s)", "", f"{counts}; {n_ok} of {n} aggregated (status ok).", ""]
    if warnings:
        lines += ["> **Validity — read before the numbers**", ">"]
        lines += [f"> - {w}" for w in warnings]
        lines += [">", "> Details per run: [Validity](#validity).", ""]
    lines += [f"## Headline: {title}", "", dilation_line(runs), "", markdown(head)]
    paper = tables["paper"]
    if len(head) < len(paper):
        lines += [
            f"Rows vs `{PAPER_BASELINE}` only; all {len(paper)} rows, one per optireduce "
            f"baseline: [{PAPER_SECTION}](#{_anchor(PAPER_SECTION)}).",
            "",
        ]
    if n_ok == 0:
        lines += [
            "_No run finished with status ok, so nothing is aggregated: each run's partial "
            "measurements are under [Runs not aggregated](#runs-not-aggregated)._",
            "",
        ]
    lines += [_definitions(tables["training"]), ""]

    if len(head) < len(paper):
        lines += [f"## {PAPER_SECTION}", ""]
        lines += _by_workload(paper, PAPER_VIEW, ["preset", "label", "baseline"])
        lines += ["CSV: [tables/paper.csv](tables/paper.csv)", ""]
    lines += ["## Round latency in and outside bursts (ms, max over ranks)", ""]
    lines += _by_workload(tables["latency"], LATENCY_VIEW, ["preset", "label"])
    lines += ["CSV: [tables/latency.csv](tables/latency.csv)", ""]
    lines += ["## Comparisons, grouped by baseline", ""]
    lines += [
        "In-burst mean ratio = the baseline's mean in-burst round latency / the transport's "
        "(a ratio of means over all in-burst rounds, not the paper's per-event statistic: "
        f"that is under [Burst events](#{_anchor(EVENTS_SECTION)})); "
        "time cuts = 1 − the transport's time / the baseline's; Δ accuracy in percentage "
        "points.",
        "",
    ]
    lines += _comparisons(tables["comparisons"])
    lines += ["CSV: [tables/comparisons.csv](tables/comparisons.csv)", ""]
    lines += [f"## {EVENTS_SECTION}", ""]
    lines += [
        "The paper's single-round statistic: for every burst event, the latency of the round it "
        "hit (the slowest round overlapping the event) under the baseline over under the "
        "transport, paired by event on the same seed and repeat; median, p90 and max over "
        f"events (the paper's {fmt_ratio(PUBLISHED['event_ratio_max'])} is a max; a max has no "
        "confidence interval, so the events "
        "and seeds it is taken over are given), beside the ratio of calm-round medians. With "
        "bursts more frequent than rounds, one round can be hit by several events.",
        "",
    ]
    lines += _by_workload(tables["events"], EVENT_VIEW, ["preset", "baseline", "label"])
    lines += ["CSV: [tables/events.csv](tables/events.csv)", ""]
    lines += _timeout_section(tables["timeout_axis"], figures.get("timeout_axis"), out_dir)
    lines += ["## Training time and accuracy", ""]
    lines += _by_workload(tables["training"], TRAINING_VIEW, ["preset", "label"])
    lines += ["CSV: [tables/training.csv](tables/training.csv)", ""]
    lines += _phase_section(tables["phase_ablation"])
    lines += ["## Delivered loss, repairs and bursts", ""]
    lines += _by_workload(tables["loss"], LOSS_VIEW, ["preset", "label"])
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

    lines += _left_out_section(runs, tables["runs"])
    lines += _validity_section(runs, tables)
    lines += [
        "## Sources",
        "",
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%SZ')} from: "
        + ", ".join(f"`{d}`" for d in runs.runs["dir"]),
        "",
        "Per-run measurements: [tables/runs.csv](tables/runs.csv); the paper's statistics: "
        "[tables/paper.csv](tables/paper.csv).",
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return Report(path, tables, figures, title, head, tuple(warnings))
