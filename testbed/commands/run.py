"""`testbed run` (placeholder until its issue lands)."""

import typer


def run() -> None:
    """Not built yet."""
    typer.echo("testbed run: not built yet", err=True)
    raise typer.Exit(3)
