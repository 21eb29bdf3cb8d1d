"""`testbed sweep` (placeholder until its issue lands)."""

import typer


def sweep() -> None:
    """Not built yet."""
    typer.echo("testbed sweep: not built yet", err=True)
    raise typer.Exit(3)
