"""`testbed sweep`: every transport x burst preset x repeat, resumable, then the report.

Needs root (each run builds the emulated network). The matrix, seeds and the resume rule
live in `testbed.sweep_plan`; `run_plan` walks any plan (a benchmark builds its own with
`sweep_plan.expand_variants`) and `report_plan` writes the report of what finished.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from testbed import sweep_plan
from testbed.commands.report import print_table
from testbed.spec import PRESENTATION_FIELDS, RunSpec, SpecError, build_spec

if TYPE_CHECKING:
    from analysis.report import Report

console = Console(stderr=True)


@dataclass(frozen=True)
class SweepResult:
    ran: int
    skipped: int
    failed: tuple[str, ...]
    interrupted: bool


def _hash_spec(spec: dict) -> str:
    return RunSpec.model_validate(spec).spec_hash()


def resolve_plan(plan: list[sweep_plan.PlannedRun]) -> dict[str, RunSpec]:
    """Every planned spec validated and resolved (topology, preset) before anything runs;
    raises SpecError naming the field."""
    from testbed.experiment import plan as resolve

    specs = {p.run_id: RunSpec.model_validate(dict(p.spec)) for p in plan}
    for spec in specs.values():
        resolve(spec)
    return specs


def _progress(status, label: str):
    """on_event callback: the current run's step count in the status line."""

    def on_event(ev: dict) -> None:
        if ev.get("event") == "step":
            status.update(f"{label}  step {ev.get('step', 0) + 1}/{ev.get('steps_total') or '?'}")

    return on_event


def run_plan(plan: list[sweep_plan.PlannedRun], out_dir: Path) -> SweepResult:
    """Run every planned run not already finished ok under out_dir, in plan order, with
    progress and an ETA across runs; stops at the first interrupted run."""
    from testbed.experiment import expected_duration_s, run_experiment

    specs = resolve_plan(plan)
    decisions = [sweep_plan.decide(out_dir / p.run_id) for p in plan]
    todo = sum(d != sweep_plan.Decision.skip for d in decisions)
    failed, durations = [], []
    for i, (p, d) in enumerate(zip(plan, decisions, strict=True), start=1):
        run_dir = out_dir / p.run_id
        label = f"[{i}/{len(plan)}] {p.variant} / {p.burst} / r{p.repeat}"
        if d == sweep_plan.Decision.skip:
            console.print(f"{label}: done before, skipped")
            continue
        if d == sweep_plan.Decision.retry:
            aside = sweep_plan.aside_path(run_dir)
            shutil.move(run_dir, aside)
            console.print(f"{label}: previous attempt not ok, kept as {aside.name}")
        left = todo - len(durations)
        per_run = sum(durations) / len(durations) if durations else None
        if per_run is None:
            per_run = expected_duration_s(specs[p.run_id])
        console.print(f"{label}: running, sweep ETA {per_run * left:.0f} s")
        started = time.monotonic()
        with console.status(label) as status:
            outcome = run_experiment(
                specs[p.run_id], out_dir, run_id=p.run_id, on_event=_progress(status, label)
            )
        durations.append(time.monotonic() - started)
        s = outcome.summary
        console.print(
            f"{label}: {outcome.status} in {durations[-1]:.0f} s"
            + (f" ({outcome.reason})" if outcome.reason else "")
            + f"  p50 {s.get('p50_ms')} ms, p99 in bursts {s.get('p99_in_burst_ms')} ms"
        )
        if outcome.status == "interrupted":
            console.print("[yellow]interrupted: stopping (re-run the same command to resume)[/]")
            return SweepResult(len(durations), len(plan) - todo, tuple(failed), True)
        if outcome.status != "ok":
            failed.append(p.run_id)
    return SweepResult(len(durations), len(plan) - todo, tuple(failed), False)


def report_plan(plan: list[sweep_plan.PlannedRun], out_dir: Path) -> Report | None:
    """Report every planned run that has a run.json (failed ones are flagged in it)."""
    dirs = [out_dir / p.run_id for p in plan if (out_dir / p.run_id / "run.json").exists()]
    if not dirs:
        console.print("[red]no runs to report[/red]")
        return None
    from analysis.report import write_report  # seaborn/scipy: only when reporting

    rep = write_report(dirs, out_dir / "report")
    for w in rep.warnings:
        console.print(f"[bold red]WARNING[/bold red] {w}")
    print_table(rep.headline_title, rep.headline)
    console.print(f"report: {rep.path}")
    return rep


def sweep(
    transports: str = typer.Option(
        "tcp,optireduce,dblp", "--transports", help="Comma-separated transports."
    ),
    bursts: str = typer.Option(
        "none,light,heavy", "--bursts", help="Comma-separated burst presets (or TOML files)."
    ),
    repeats: int = typer.Option(3, "--repeats", min=1, help="Repeats; seed = base seed + r."),
    config: Path | None = typer.Option(
        None, "--config", help="TOML `[run]` table: the base spec of every run."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Sweep folder (default results/sweep-<plan digest>)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and what would run."),
) -> None:
    """Run the matrix with the same seeds for every transport; skip runs already done."""
    try:
        base = build_spec(config).model_dump(mode="json", exclude=set(PRESENTATION_FIELDS))
        plan = sweep_plan.expand(
            base,
            sweep_plan.parse_list(transports, "transports"),
            sweep_plan.parse_list(bursts, "bursts"),
            repeats,
            _hash_spec,
        )
        resolve_plan(plan)
    except SpecError as e:
        console.print(f"[red]bad spec: {e}[/red]")
        raise typer.Exit(2) from e
    except ValueError as e:  # pydantic's ValidationError is one too
        console.print(f"[red]bad sweep: {e}[/red]")
        raise typer.Exit(2) from e
    out_dir = out if out is not None else Path("results") / f"sweep-{sweep_plan.plan_digest(plan)}"
    decisions = [sweep_plan.decide(out_dir / p.run_id) for p in plan]
    todo = sum(d != sweep_plan.Decision.skip for d in decisions)
    console.print(
        f"sweep {out_dir}: {len(plan)} runs, {len(plan) - todo} done, {todo} to run "
        f"(seeds {sorted({p.seed for p in plan})})"
    )
    if dry_run:
        for p, d in zip(plan, decisions, strict=True):
            console.print(f"  {d.value:5s}  {p.run_id}  seed={p.seed}")
        return
    result = run_plan(plan, out_dir)
    report_plan(plan, out_dir)
    if result.interrupted:
        raise typer.Exit(130)
    if result.failed:
        console.print(f"[red]{len(result.failed)} run(s) not ok: {', '.join(result.failed)}[/red]")
        raise typer.Exit(1)
