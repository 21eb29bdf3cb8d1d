"""`testbed`: one Typer app, one sub-app or command per noun (see `testbed --help`).

Each command lives in `testbed/cli/commands/<noun>.py`; this file only wires them.
"""

from importlib import metadata

import typer

from testbed.cli.commands import bursts, clean, doctor, ingest, report, run, sweep, topo

app = typer.Typer(
    name="testbed",
    help=(
        "Mininet testbed for distributed training over bursty datacenter networks.\n\n"
        "Start with `testbed doctor` (what this kernel can emulate), then\n"
        "`testbed run --topo fattree --burst heavy` and `testbed report results/last`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"testbed {metadata.version('dblp-testbed')}")
        raise typer.Exit()


@app.callback()
def _app_options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Mininet testbed for distributed training over bursty datacenter networks."""


app.add_typer(topo.app, name="topo")
app.add_typer(bursts.app, name="bursts")
app.command("doctor")(doctor.doctor)
app.command("clean")(clean.clean)
app.command("run")(run.run)
app.command("report")(report.report)
app.command("ingest")(ingest.ingest)
app.command("sweep")(sweep.sweep)
