"""`testbed clean`: remove leftovers of this tool's crashed runs, never anyone else's."""

from __future__ import annotations

import json
import os

import typer

from testbed.network import cleanup


def clean(
    dry_run: bool = typer.Option(False, "--dry-run", help="list what would be removed"),
    json_out: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Remove namespaces, processes and state of crashed runs of this tool (by its records)."""
    if os.geteuid() != 0:
        typer.echo("testbed clean needs root (it kills processes and deletes namespaces)", err=True)
        raise typer.Exit(1)
    report = cleanup.clean(dry_run=dry_run)
    if json_out:
        typer.echo(json.dumps({"dry_run": dry_run, **report.to_dict()}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    typer.echo(f"{verb}: {len(report.state_dirs)} crashed run(s), {len(report.killed)} "
               f"process(es), {len(report.netns)} probe namespace(s)")  # fmt: skip
    for d in report.live_runs:
        typer.echo(f"left alone (its owner is still running): {d}")
    if report.unverified_netns:
        typer.echo(f"{report.unverified_netns} recorded namespace(s) had no verifiable process "
                   "left (already gone, or not provably ours): not touched")  # fmt: skip
