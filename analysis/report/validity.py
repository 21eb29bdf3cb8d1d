"""What is wrong with the runs: the summary block at the top and the Validity section."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.fidelity import (
    CALM_BOUND_MAX,
    DAMAGE,
    LATE_QUANTILE,
    MIN_CALM_ROUNDS,
    SHAM_SHIFT_MAX,
    TOLERANCE_CONFIDENCE,
)
from analysis.load import Runs, mixed_specs
from analysis.provenance import Provenance, provenance
from analysis.report.columns import markdown, view
from analysis.report.formatting import fmt_factor
from analysis.report.views import SHAM_VIEW, VALIDITY_VIEW
from analysis.tables.common import rejections_text

#: Runs named in a summary line before it says "and k more".
NAMED_RUNS = 3


def _names(ids: Sequence[str], limit: int = NAMED_RUNS, form: str = "`{}`") -> str:
    shown = ", ".join(form.format(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _gone(r: pd.DataFrame) -> str:
    """The variants left out of the tables altogether (every run of them unfaithful), so that
    a reader missing a label from the tables learns why."""
    bad = r["unfaithful"].astype(bool)
    kept = r.loc[~bad & (r["status"] == "ok"), "label"]
    gone = sorted(set(r.loc[bad, "label"]) - set(kept))
    return f"; no run left of {_names(gone, form='{}')}" if gone else ""


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

    for status in ("failed", "interrupted", "running", "partial"):
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
            + (
                ""
                if runs.include_unfaithful
                else "; left out of every aggregate (--include-unfaithful puts them back)"
                + _gone(r)
            )
        )
    k, ids = of(r["not_judged"].astype(bool))
    if k:
        out.append(
            f"{k} of {n} runs NOT JUDGED for fidelity: under bursts they had fewer than "
            f"{MIN_CALM_ROUNDS} calm rounds, too few to tell the CPU's delay from the bursts' "
            "after-effects; their latencies are aggregated, unverified"
            + ("" if k == n else f" ({_names(ids)})")
        )
    k, ids = of(r["oversubscribed"].astype(bool))
    if k:
        out.append(
            f"{k} of {n} runs oversubscribed (more workers than cores)"
            + ("" if k == n else f" ({_names(ids)})")
        )
    out += _provenance_warnings(provenance(r), n)
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


def _short(commit: str) -> str:
    return f"`{commit[:10]}`" if commit else "none recorded"


def _provenance_warnings(prov: Provenance, n: int) -> list[str]:
    out = []
    k = len(prov.dirty)
    if k:
        out.append(
            f"{k} of {n} runs made from a DIRTY tree (uncommitted changes: no commit says what "
            "code made them)" + ("" if k == n else f" ({_names(prov.dirty)})")
        )
    k = len(prov.other)
    if k:
        out.append(
            f"{k} of {n} runs made from a commit other than the newest among the runs, "
            f"{_short(prov.newest)} ({_names(prov.other)})"
        )
    return out


def provenance_lines(runs: Runs) -> list[str]:
    """The Validity section's provenance: the newest commit, and every run made from a dirty
    tree or from another commit, named and counted."""
    prov = provenance(runs.runs)
    n = len(runs.runs)
    lines = [
        "### Provenance",
        "",
        "Each run.json records the commit the run was made from (`git_commit`) and whether "
        "tracked files differed from it (`git_dirty`). A run from a dirty tree, or from "
        "another commit than the newest among these runs, measured code this report cannot "
        "name.",
        "",
    ]
    if not prov.newest:
        lines += ["No run recorded its commit, so nothing ties these runs to any code.", ""]
    elif not prov.flagged:
        return lines + [f"All {n} runs were made from commit {_short(prov.newest)}, clean.", ""]
    else:
        how = f" (by {prov.rule})" if prov.rule else ""
        lines += [f"The newest commit among the runs: {_short(prov.newest)}{how}.", ""]
    if prov.dirty:
        named = ", ".join(f"`{i}`" for i in prov.dirty)
        lines += [f"- {len(prov.dirty)} of {n} runs from a dirty tree: {named}"]
    if prov.other:
        named = ", ".join(f"`{i}` ({_short(prov.commit_of[i])})" for i in prov.other)
        lines += [f"- {len(prov.other)} of {n} runs from another commit: {named}"]
    return lines + ([""] if prov.flagged else [])


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


def _earlier_verdict(runs: Runs) -> str:
    """Runs keep the verdict of the code that made them: say so where it was the earlier one."""
    r = runs.runs
    k = int(r["earlier_verdict"].sum()) if "earlier_verdict" in r else 0
    if not k:
        return ""
    return (
        f" {k} of {len(r)} runs were judged by the earlier verdict (more than 5% of rounds with "
        "the loop late beyond max(one idle gap, 10% of the round), or calm rounds above 1.5x "
        "their bound), as run.json records it."
    )


def validity_section(runs: Runs, tables: dict[str, pd.DataFrame]) -> list[str]:
    lines = [
        "## Validity",
        "",
        "A run is **unfaithful** when the transport's event loop woke more than one idle gap "
        f"after its timer at the p{LATE_QUANTILE * 100:.0f} of its rounds, or its calm rounds "
        "ran slower against their pacing bound than the same shape and seed's calibration "
        f"allows (by more than {DAMAGE:.0%} or a one-sided {TOLERANCE_CONFIDENCE:.0%} bound from "
        "repeated "
        f"calibrations), or slower than {CALM_BOUND_MAX}x it in any case (the emulator did not "
        "keep up; the median CPU wait per round is shown but is not the verdict). Under bursts "
        f"a run with fewer than {MIN_CALM_ROUNDS} calm rounds is **not judged**. "
        "**Rejected datagrams** are "
        "those the transport refused (wrong job token, a "
        "source that is not the rank the header names, non-finite values): someone else was "
        "sending into the job. Only runs with status ok"
        + ("" if runs.include_unfaithful else " and faithful")
        + " are aggregated."
        + _earlier_verdict(runs),
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
    return lines + provenance_lines(runs)


# ---------------------------------------------------------------------------- report
