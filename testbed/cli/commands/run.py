"""`testbed run`: one experiment on the emulated network (needs root).

Every field of the spec (`testbed.spec.RunSpec`) is a flag, generated from the field: its help,
panel, choices and default live there. Flags override `--config FILE.toml` (a `[run]` table
with the same names, underscores for dashes). The spec is validated and planned (topology,
preset, placement, burst schedule) before anything is built: a bad value exits 2 and names the
field, and the machine is left untouched.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from testbed.base.terminal import Progress, console
from testbed.cli.commands.options import spec_options
from testbed.spec import RunSpec, SpecError, build_spec
from workloads.spec import OUTPUT

SUMMARY_KEYS = ("wall_s", "steps", "final_acc", "comm_fraction", "p50_ms", "p99_ms",
                "p99_in_burst_ms", "p50_no_burst_ms", "delivered_loss_mean", "bursts")  # fmt: skip


@spec_options(RunSpec)
def run(
    config: Path | None = typer.Option(
        None, help="TOML file with a `run` table of these options.", rich_help_panel=OUTPUT
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the summary as JSON on stdout.", rich_help_panel=OUTPUT
    ),
    **fields: Any,
) -> None:
    """Run one experiment: build the network, play the bursts, train, write results/<run-id>/.

    Example: testbed run --topo fattree --burst heavy --transport dblp
    """
    from testbed.run.experiment import plan
    from testbed.run.results import check_out

    try:
        planned = plan(build_spec(config, **fields))
        check_out(planned.spec.out, planned.spec.run_id)
    except SpecError as e:
        _invalid(e)
    if os.geteuid() != 0:
        typer.echo("error: testbed run needs root (network namespaces, tc): run it as root",
                   err=True)  # fmt: skip
        raise typer.Exit(2)
    from testbed.run.experiment import run_experiment

    term = console(stderr=True)
    progress = Progress(term)
    try:
        outcome = run_experiment(planned, on_event=progress)
    except SpecError as e:  # the run folder could not be made: nothing was built
        _invalid(e)
    finally:
        progress.close()
    if json_out:
        sys.stdout.write(json.dumps(outcome.summary, indent=2, default=str) + "\n")
    else:
        _print_summary(term, outcome)
    if outcome.status != "ok":
        typer.echo(f"run {outcome.status}: {outcome.reason}", err=True)
        raise typer.Exit(1)


def _invalid(e: SpecError) -> NoReturn:
    typer.echo(f"error: invalid spec: {e}", err=True)
    raise typer.Exit(2) from e


def _print_summary(term: Console, outcome) -> None:
    s = outcome.summary
    term.print(f"[bold]{outcome.status}[/bold] {outcome.run_dir}")
    for key in SUMMARY_KEYS:
        if key in s:
            term.print(f"  {key:20s} {s[key]}")
    for w in s.get("warnings", []):
        term.print(f"  [yellow]warning[/yellow] {w}")
