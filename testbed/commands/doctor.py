"""`testbed doctor` (placeholder until its issue lands)."""

import typer


def doctor() -> None:
    """Not built yet."""
    typer.echo("testbed doctor: not built yet", err=True)
    raise typer.Exit(3)
