"""`testbed clean` (placeholder until its issue lands)."""

import typer


def clean() -> None:
    """Not built yet."""
    typer.echo("testbed clean: not built yet", err=True)
    raise typer.Exit(3)
