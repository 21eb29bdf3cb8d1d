"""`testbed sweep`: every transport x burst preset x repeat, resumable, then the report.

Needs root (each run builds the emulated network). The matrix, seeds and the resume rule
live in `testbed.sweeps.sweep_plan`; running and reporting a plan in `testbed.sweeps.sweep_runner`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from testbed.base.terminal import console
from testbed.bursts import presets
from testbed.spec import RunSpec, SpecError, build_spec, hash_of
from testbed.sweeps import sweep_plan
from testbed.sweeps.sweep_runner import report_plan, resolve_plan, run_plan
from workloads.spec import flags

#: The transports a sweep can compare: the spec's choices (the completion policies, then tcp).
TRANSPORTS: tuple[str, ...] = flags(RunSpec, ["transport"])[0].choices or ()


def usage_error(option: str, message: str) -> typer.Exit:
    """`error: --option: message` on stderr, one plain line at any width; exit 2 (usage)."""
    typer.echo(f"error: {option}: {message}", err=True)
    return typer.Exit(2)


def parse_transports(text: str) -> tuple[str, ...]:
    """--transports as a tuple; a name that is not a transport exits 2 naming it."""
    try:
        names = sweep_plan.parse_list(text, "transports")
    except ValueError as e:
        raise usage_error("--transports", str(e).removeprefix("--transports: ")) from e
    bad = [n for n in names if n not in TRANSPORTS]
    if bad:
        what = "is not a transport" if len(bad) == 1 else "are not transports"
        raise usage_error(
            "--transports",
            f"{', '.join(map(repr, bad))} {what}; choose from {', '.join(TRANSPORTS)}",
        )
    return names


def parse_bursts(text: str) -> tuple[str, ...]:
    """--bursts as a tuple; a preset that does not load exits 2 naming it."""
    try:
        names = sweep_plan.parse_list(text, "bursts")
        for name in names:
            presets.load(name)
    except ValueError as e:  # PresetError is one
        raise usage_error("--bursts", str(e).removeprefix("--bursts: ")) from e
    return names


def sweep(
    transports: str = typer.Option(
        "tcp,optireduce,dblp",
        "--transports",
        help=f"Comma-separated transports, of: {', '.join(TRANSPORTS)}.",
    ),
    bursts: str = typer.Option(
        "none,light,heavy", "--bursts", help="Comma-separated burst presets (or TOML files)."
    ),
    repeats: int = typer.Option(3, "--repeats", min=1, help="Repeats; seed = base seed + r."),
    config: Path | None = typer.Option(
        None, "--config", help="TOML file with a `\\[run]` table: the base spec of every run."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Sweep folder (default results/sweep-<plan digest>)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and what would run."),
) -> None:
    """Run the matrix with the same seeds for every transport; skip runs already done."""
    term = console(stderr=True)
    chosen, presets_ = parse_transports(transports), parse_bursts(bursts)
    try:
        plan = sweep_plan.expand(build_spec(config).measured(), chosen, presets_, repeats, hash_of)
        resolved = resolve_plan(plan)
    except SpecError as e:
        raise usage_error(e.flag, e.message) from e
    except ValueError as e:
        raise usage_error("sweep", str(e)) from e
    out_dir = out if out is not None else Path("results") / f"sweep-{sweep_plan.plan_digest(plan)}"
    decisions = [sweep_plan.decide(out_dir / p.run_id) for p in plan]
    todo = sum(d != sweep_plan.Decision.skip for d in decisions)
    term.print(
        f"sweep {out_dir}: {len(plan)} runs, {len(plan) - todo} done, {todo} to run "
        f"(seeds {sorted({p.seed for p in plan})})",
        markup=False,
        highlight=False,
    )
    if dry_run:
        for p, d in zip(plan, decisions, strict=True):
            term.print(f"  {d.value:5s}  {p.run_id}  seed={p.seed}", markup=False, highlight=False)
        return
    result = run_plan(plan, out_dir, resolved)
    report_plan(plan, out_dir)
    if result.interrupted:
        raise typer.Exit(130)
    if result.failed:
        term.print(f"[red]{len(result.failed)} run(s) not ok: {', '.join(result.failed)}[/red]")
        raise typer.Exit(1)
