"""`testbed bursts ...` (placeholder until its issue lands)."""

import typer

app = typer.Typer(help="not built yet", no_args_is_help=True)


@app.command("show")
def show() -> None:
    """Not built yet."""
    typer.echo("testbed bursts: not built yet", err=True)
    raise typer.Exit(3)
