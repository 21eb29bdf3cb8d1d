"""`testbed report RUN_DIR... [--out DIR]`: report.md, a CSV per table, figures; the headline
table in the terminal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from analysis.schema import SchemaError
from testbed.base.terminal import console, print_table


def expand_run_dirs(paths: list[Path]) -> list[Path]:
    """Run folders as given; a folder of run folders (a sweep) stands for the runs in it,
    leaving out symlinks (`last`) and retried attempts kept aside (`*.prevN`)."""
    out = []
    for p in paths:
        p = p.resolve()
        if (p / "run.json").exists() or not p.is_dir():
            out.append(p)
            continue
        inner = sorted(
            d
            for d in p.iterdir()
            if d.is_dir()
            and not d.is_symlink()
            and ".prev" not in d.name
            and (d / "run.json").exists()
        )
        out.extend(inner or [p])
    return out


def default_out(run_dirs: list[Path]) -> Path:
    """One run: its own folder. Several: results/report-<UTC time>."""
    if len(run_dirs) == 1:
        return run_dirs[0]
    return Path("results") / f"report-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def report(
    run_dirs: list[Path] = typer.Argument(
        ...,
        help="Run folders (e.g. results/last), or a sweep folder holding run folders.",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Output folder (default: the run folder, or results/report-<time>)."
    ),
    target_acc: float | None = typer.Option(
        None,
        "--target-acc",
        help="Accuracy for time-to-accuracy (default: 95% of the lowest mean final accuracy).",
    ),
    include_unfaithful: bool = typer.Option(
        False,
        "--include-unfaithful",
        help="Aggregate unfaithful runs too (by default they are listed, not aggregated: the "
        "emulator's CPU distorted their timing).",
    ),
) -> None:
    """Tables (markdown + CSV) and figures (PNG) for one run or many."""
    term = console()
    dirs = expand_run_dirs(run_dirs)
    missing = [str(d) for d in dirs if not (d / "run.json").exists()]
    if missing:
        typer.echo(f"error: not a run folder (no run.json): {', '.join(missing)}", err=True)
        if any(list(Path(d).glob("rank*/meta.json")) for d in missing):
            typer.echo(
                "  rank folders of a torchrun job: make a run folder of them first with "
                "`testbed ingest DIR... --out RUN_DIR`",
                err=True,
            )
        raise typer.Exit(2)
    if out is None and len(run_dirs) == 1 and len(dirs) > 1:
        out = run_dirs[0] / "report"  # a sweep folder: its report lives inside it
    out_dir = out if out is not None else default_out(dirs)
    try:
        from analysis.report import write_report  # seaborn/scipy: only when reporting

        rep = write_report(dirs, out_dir, target_acc, include_unfaithful)
    except (SchemaError, ValueError) as e:
        term.print(f"[red]cannot report: {e}[/red]")
        raise typer.Exit(2) from e
    for w in rep.warnings:
        term.print(f"[bold red]WARNING[/bold red] {w}")
    print_table(rep.headline_title, rep.headline)
    term.print(f"report: {rep.path}  ({len(rep.tables)} tables, {len(rep.figures)} figures)")
