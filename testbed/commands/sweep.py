"""`testbed sweep`: every transport x burst preset x repeat, resumable, then the report.

Needs root (each run builds the emulated network). The matrix, seeds and the resume rule
live in `testbed.sweep_plan`; running and reporting a plan in `testbed.sweep_runner`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from testbed import sweep_plan
from testbed.spec import SpecError, build_spec, hash_of
from testbed.sweep_runner import report_plan, resolve_plan, run_plan
from testbed.terminal import console


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
    term = console(stderr=True)
    try:
        plan = sweep_plan.expand(
            build_spec(config).measured(),
            sweep_plan.parse_list(transports, "transports"),
            sweep_plan.parse_list(bursts, "bursts"),
            repeats,
            hash_of,
        )
        resolved = resolve_plan(plan)
    except SpecError as e:
        term.print(f"[red]bad spec: {e}[/red]")
        raise typer.Exit(2) from e
    except ValueError as e:  # pydantic's ValidationError is one too
        term.print(f"[red]bad sweep: {e}[/red]")
        raise typer.Exit(2) from e
    out_dir = out if out is not None else Path("results") / f"sweep-{sweep_plan.plan_digest(plan)}"
    decisions = [sweep_plan.decide(out_dir / p.run_id) for p in plan]
    todo = sum(d != sweep_plan.Decision.skip for d in decisions)
    term.print(
        f"sweep {out_dir}: {len(plan)} runs, {len(plan) - todo} done, {todo} to run "
        f"(seeds {sorted({p.seed for p in plan})})"
    )
    if dry_run:
        for p, d in zip(plan, decisions, strict=True):
            term.print(f"  {d.value:5s}  {p.run_id}  seed={p.seed}")
        return
    result = run_plan(plan, out_dir, resolved)
    report_plan(plan, out_dir)
    if result.interrupted:
        raise typer.Exit(130)
    if result.failed:
        term.print(f"[red]{len(result.failed)} run(s) not ok: {', '.join(result.failed)}[/red]")
        raise typer.Exit(1)
