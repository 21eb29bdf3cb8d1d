"""`testbed bursts list|show`: the burst presets as data (no root, no network needed).

`show` lays the preset onto the network the same topology options describe for `testbed run`
and `testbed topo show` (default: fat-tree k=4), with `--workers` placed round-robin across
pods as a run places them (default: h1, h5, h9, h13). A round-aligned preset (`paper-*`) shows
the rounds it hits in a run of `--rounds` rounds instead of times.
"""

from __future__ import annotations

import json
import math
from typing import Any

import typer
from rich.table import Table

from testbed.base.terminal import console
from testbed.bursts import presets, schedule
from testbed.cli.commands.options import spec_options
from testbed.cli.commands.topo import make_topology
from testbed.spec import TOPOLOGY_FIELDS, RunSpec

app = typer.Typer(
    help="Burst presets: list them, show one's seeded schedule.", no_args_is_help=True
)


def _positive_seconds(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a finite number of seconds > 0, got {value}")
    return value


@app.command("list")
def list_presets() -> None:
    """The built-in presets with their content hash and streams."""
    table = Table("preset", "hash", "streams", "description")
    for name in presets.builtin_names():
        p = presets.load(name)
        streams = "; ".join(_stream_text(s) for s in p.streams)
        table.add_row(name, p.hash, streams or "-", p.description)
    console().print(table)


def _stream_text(s: presets.Stream) -> str:
    if s.align == "round":
        if s.rounds.fraction is not None:
            return f"{s.kind} {s.magnitude:g} for one round, {s.rounds.fraction:.0%} of the rounds"
        least, most = s.rounds.count
        return f"{s.kind} {s.magnitude:g} for one round, {least}-{most} rounds a run"
    return (
        f"{s.kind} {s.magnitude:g} for {s.duration_s * 1000:g} ms every "
        f"{s.arrival.min_gap_s:g}+Exp({s.arrival.mean_extra_gap_s:g}) s"
        + (" (sham)" if s.sham else "")
    )


@app.command("show")
@spec_options(RunSpec, (*TOPOLOGY_FIELDS, "workers", "rounds"))
def show(
    preset: str = typer.Argument(..., help="A built-in preset name or a TOML file."),
    seed: int = typer.Option(
        0, min=0, max=2**32 - 1, help="Schedule seed (same seed, same events)."
    ),
    duration: float = typer.Option(
        10.0, callback=_positive_seconds, help="Seconds of schedule to generate."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    **fields: Any,
) -> None:
    """The seeded events PRESET produces on a network (the options of `testbed run`)."""
    try:
        p = presets.load(preset)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    topo, spec = make_topology(**fields)
    try:
        presets.check_event_bound(p, duration, spec.rounds)
    except ValueError as e:
        flag = "--rounds" if p.round_aligned else "--duration"
        typer.echo(f"error: {flag}: {e}", err=True)
        raise typer.Exit(2) from e
    try:
        workers = schedule.place_workers(topo, spec.workers)
        events = schedule.generate(p, topo, workers, duration, seed, rounds=spec.rounds)
    except ValueError as e:
        typer.echo(f"error: {p.name} on {topo.name}: {e}", err=True)
        raise typer.Exit(2) from e
    if as_json:
        body = {"preset": p.name, "hash": p.hash, "events": [e.to_dict() for e in events]}
        typer.echo(json.dumps(body))
        return
    when = ("round",) if p.round_aligned else ("start s", "end s")
    table = Table("id", *when, "kind", "magnitude", "direction", "params")
    for e in events:
        params = {k: v for k, v in e.params.items() if k != "steps"}
        if "steps" in e.params:
            params["flips"] = len(e.params["steps"])
        at = (
            (str(e.round),)
            if e.round is not None
            else (f"{e.planned_start_s:.3f}", f"{e.planned_end_s:.3f}")
        )
        table.add_row(
            str(e.event_id),
            *at,
            e.kind,
            f"{e.magnitude:g}",
            str(e.direction),
            json.dumps(params),
        )
    term = console()
    term.print(
        f"preset {p.name} (hash {p.hash}) on {topo.name}, seed {seed}, "
        f"workers {', '.join(workers)}",
        markup=False,
        highlight=False,
    )
    term.print(table)
