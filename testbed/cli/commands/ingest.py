"""`testbed ingest DIR... --out RUN_DIR`: the rank folders of one torchrun job -> a run folder
(the checks and the merge are `testbed.run.ingest`'s)."""

from __future__ import annotations

from pathlib import Path

import typer

from testbed.run.ingest import START_SPREAD_S, IngestError, ingest_job


def ingest(
    inputs: list[Path] = typer.Argument(
        ..., help="The job's rank folders (rank<R>/), or folders holding them, from every machine."
    ),
    out: Path = typer.Option(..., "--out", help="The run folder to write (new or empty)."),
    label: str | None = typer.Option(
        None, "--label", help="Name in reports (default: the transport's, then (torchrun))."
    ),
    start_spread: float = typer.Option(
        START_SPREAD_S,
        "--start-spread",
        help="Most seconds between the first and the last rank's start: ranks further apart "
        "are taken for two jobs of one spec.",
    ),
) -> None:
    """Make one run folder of a torchrun job's rank folders; then `testbed report RUN_DIR`."""
    try:
        info = ingest_job([p.resolve() for p in inputs], out, label, start_spread)
    except IngestError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    hosts = ", ".join(f"rank {r} on {h}" for r, h in info.worker_hosts.items())
    typer.echo(f"{info.status} {out}: {info.workload} over {info.transport}, {hosts}")
    if info.reason:
        typer.echo(f"  {info.reason}")
    typer.echo(f"next: testbed report {out}")
