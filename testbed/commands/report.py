"""`testbed report` (placeholder until its issue lands)."""

import typer


def report() -> None:
    """Not built yet."""
    typer.echo("testbed report: not built yet", err=True)
    raise typer.Exit(3)
