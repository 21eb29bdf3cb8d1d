"""Walking a sweep plan: every planned run resolved first, then run in order, then reported.

`testbed sweep` and `make bench` both hand a plan (`testbed.sweeps.sweep_plan`) here. Needs root to
run (each run builds the emulated network); resolving and reporting do not.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from testbed.base.terminal import RunsProgress, console, print_table
from testbed.spec import RunSpec
from testbed.sweeps import sweep_plan

if TYPE_CHECKING:
    from analysis.report import Report
    from testbed.run.experiment import Plan


@dataclass(frozen=True)
class SweepResult:
    ran: int
    skipped: int
    failed: tuple[str, ...]
    interrupted: bool


def resolve_plan(plan: list[sweep_plan.PlannedRun]) -> dict[str, Plan]:
    """Every planned spec validated and resolved (topology, preset, schedule) before anything
    runs, by run id; raises SpecError naming the field."""
    from testbed.run.experiment import plan as resolve

    return {p.run_id: resolve(RunSpec.model_validate(dict(p.spec))) for p in plan}


def run_plan(
    plan: list[sweep_plan.PlannedRun],
    out_dir: Path,
    resolved: dict[str, Plan] | None = None,
) -> SweepResult:
    """Run every planned run not already finished ok under out_dir, in plan order, with a
    progress bar (runs done / total, elapsed, ETA) on a terminal and a plain line per run;
    stops at the first interrupted run. `resolved` is `resolve_plan(plan)` when the caller
    has it already."""
    from analysis.report import fmt_num
    from testbed.run.experiment import expected_duration_s, run_experiment

    resolved = resolved if resolved is not None else resolve_plan(plan)
    decisions = [sweep_plan.decide(out_dir / p.run_id) for p in plan]
    todo = sum(d != sweep_plan.Decision.skip for d in decisions)
    failed: list[str] = []
    with RunsProgress(console(stderr=True), todo) as progress:
        for i, (p, d) in enumerate(zip(plan, decisions, strict=True), start=1):
            run_dir = out_dir / p.run_id
            label = f"[{i}/{len(plan)}] {p.variant} / {p.burst} / r{p.repeat}"
            if d == sweep_plan.Decision.skip:
                progress.say(f"{label}: done before, skipped")
                continue
            if d == sweep_plan.Decision.retry:
                aside = sweep_plan.aside_path(run_dir)
                shutil.move(run_dir, aside)
                progress.say(f"{label}: previous attempt not ok, kept as {aside.name}")
            progress.start(label, expected_duration_s(resolved[p.run_id].spec))
            progress.say(f"{label}: running, sweep ETA {progress.eta_s():.0f} s")
            outcome = run_experiment(
                resolved[p.run_id], out_dir, run_id=p.run_id, on_event=progress.on_event
            )
            took = progress.finish()
            s = outcome.summary
            progress.say(
                f"{label}: {outcome.status} in {took:.0f} s"
                + (f" ({outcome.reason})" if outcome.reason else "")
                + f"  p50 {fmt_num(s.get('p50_ms'))} ms, "
                f"p99 in bursts {fmt_num(s.get('p99_in_burst_ms'))} ms"
            )
            ran = len(progress.durations)
            if outcome.status == "interrupted":
                progress.say("interrupted: stopping (re-run the same command to resume)")
                return SweepResult(ran, len(plan) - todo, tuple(failed), True)
            if outcome.status != "ok":
                failed.append(p.run_id)
    return SweepResult(len(progress.durations), len(plan) - todo, tuple(failed), False)


def report_plan(
    plan: list[sweep_plan.PlannedRun], out_dir: Path, report_dir: Path | None = None
) -> Report | None:
    """Report every planned run in out_dir that has a run.json (failed ones are flagged in
    it), into report_dir (default out_dir/report)."""
    out = console(stderr=True)
    dirs = [out_dir / p.run_id for p in plan if (out_dir / p.run_id / "run.json").exists()]
    if not dirs:
        out.print("[red]no runs to report[/red]")
        return None
    from analysis.report import write_report  # seaborn/scipy: only when reporting

    rep = write_report(dirs, report_dir if report_dir is not None else out_dir / "report")
    for w in rep.warnings:
        out.print(f"[bold red]WARNING[/bold red] {escape(w)}")  # a worker's error has brackets
    print_table(rep.headline_title, rep.headline)
    out.print(f"report: {rep.path}")
    return rep
