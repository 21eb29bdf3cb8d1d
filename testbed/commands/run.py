"""`testbed run`: one experiment on the emulated network (needs root).

Flags override `--config FILE.toml` (a `[run]` table with the same names, underscores
for dashes). The spec is validated before anything is built: a bad value exits 2 and
names the field, and the machine is left untouched.
"""

from __future__ import annotations

import json
import os
import sys
import time
from enum import Enum, StrEnum
from pathlib import Path
from typing import get_args

import typer
from rich.console import Console

from testbed import spec as spec_types
from testbed.spec import RunSpec, SpecError, build_spec


def _choices(name: str, literal) -> type[StrEnum]:
    """A str Enum of a spec Literal, so `--help` lists the choices the spec accepts."""
    return StrEnum(name, {v: v for v in get_args(literal)})


TopoName = _choices("TopoName", spec_types.Topo)
TransportName = _choices("TransportName", spec_types.Transport)
WorkloadName = _choices("WorkloadName", spec_types.Workload)
ModelName = _choices("ModelName", spec_types.Model)
PhaseMode = _choices("PhaseMode", spec_types.Phase)
OptiMode = _choices("OptiMode", spec_types.OptiMode)
ImpairName = _choices("ImpairName", spec_types.Impair)


def _val(x):
    return x.value if isinstance(x, Enum) else x


class Progress:
    """A one-line live status (step, epoch, round latency, delivered loss, ETA) on stderr."""

    def __init__(self, console: Console):
        self.console = console
        self.started = time.monotonic()
        self.status = console.status("starting", spinner="dots")
        self.status.start()

    def __call__(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "phase":
            self.console.log(ev["what"])
        elif kind == "t0":
            self.console.log("first training step: burst schedule started")
            self.t0 = time.monotonic()
        elif kind == "step":
            step, total = ev.get("step", 0), ev.get("steps_total") or 0
            elapsed = time.monotonic() - getattr(self, "t0", self.started)
            eta = elapsed / (step + 1) * (total - step - 1) if total else float("nan")
            self.status.update(
                f"step {step + 1}/{total}  epoch {ev.get('epoch', 0)}  "
                f"round {ev.get('round_ms', float('nan')):.0f} ms  "
                f"loss {ev.get('delivered_loss', 0.0):.2%}  ETA {eta:.0f} s"
            )
        elif kind == "eval":
            self.console.log(f"eval at step {ev.get('step')}: test acc {ev.get('test_acc'):.3f}")

    def close(self) -> None:
        self.status.stop()


def _d(name: str) -> str:
    """The spec's default of a field, for help texts (one source of truth: RunSpec)."""
    default = RunSpec.model_fields[name].default
    return f" (default {default})" if default is not None else ""


NET, BURST, WORK, XPORT, OUT = "Network", "Bursts", "Workload", "Transport", "Output"


def run(
    topo: TopoName = typer.Option(None, help="Built-in topology" + _d("topo"), rich_help_panel=NET),
    topo_file: Path = typer.Option(
        None, help="Custom topology TOML (nodes, tiers, links).", rich_help_panel=NET
    ),
    k: int = typer.Option(None, help="Fat-tree arity, even" + _d("k"), rich_help_panel=NET),
    bw: float = typer.Option(None, help="Link rate, Mbit/s" + _d("bw"), rich_help_panel=NET),
    queue: int = typer.Option(
        None, help="Egress queue limit, packets (shallow)" + _d("queue"), rich_help_panel=NET
    ),
    tcp_rto_min_ms: float = typer.Option(
        None, help="tcp_rto_min in every host, ms" + _d("tcp_rto_min_ms"), rich_help_panel=NET
    ),
    burst: str = typer.Option(
        None,
        help="Preset (`testbed bursts list`) or a TOML file" + _d("burst"),
        rich_help_panel=BURST,
    ),
    impair: ImpairName = typer.Option(
        None, help="Loss mechanism" + _d("impair"), rich_help_panel=BURST
    ),
    workload: WorkloadName = typer.Option(
        None, help="What runs" + _d("workload"), rich_help_panel=WORK
    ),
    model: ModelName = typer.Option(
        None, help="cnn: digits; resnet: synthetic CIFAR" + _d("model"), rich_help_panel=WORK
    ),
    workers: int = typer.Option(
        None, help="DDP ranks, one per host" + _d("workers"), rich_help_panel=WORK
    ),
    epochs: int = typer.Option(None, help="Training epochs" + _d("epochs"), rich_help_panel=WORK),
    steps: int = typer.Option(None, help="Cap on training steps.", rich_help_panel=WORK),
    batch_size: int = typer.Option(
        None, help="Batch per rank" + _d("batch_size"), rich_help_panel=WORK
    ),
    lr: float = typer.Option(None, help="SGD learning rate" + _d("lr"), rich_help_panel=WORK),
    resync_every: int = typer.Option(
        None, help="Re-broadcast rank 0's parameters every M steps.", rich_help_panel=WORK
    ),
    size_mib: float = typer.Option(
        None, help="allreduce workload: bucket, MiB" + _d("size_mib"), rich_help_panel=WORK
    ),
    rounds: int = typer.Option(
        None, help="allreduce workload: rounds" + _d("rounds"), rich_help_panel=WORK
    ),
    interval_ms: float = typer.Option(
        None, help="allreduce workload: compute gap, ms" + _d("interval_ms"), rich_help_panel=WORK
    ),
    probe_src: str = typer.Option(None, help="iperf3/ping: source host.", rich_help_panel=WORK),
    probe_dst: str = typer.Option(
        None, help="iperf3/ping: destination host.", rich_help_panel=WORK
    ),
    duration_s: float = typer.Option(
        None, help="iperf3/ping: seconds" + _d("duration_s"), rich_help_panel=WORK
    ),
    transport: TransportName = typer.Option(
        None, help="Gradient transport" + _d("transport"), rich_help_panel=XPORT
    ),
    bucket_cap_mb: float = typer.Option(
        None, help="DDP bucket cap, all transports" + _d("bucket_cap_mb"), rich_help_panel=XPORT
    ),
    phase: PhaseMode = typer.Option(
        None, help="dblp: ε by training phase, or pinned" + _d("phase"), rich_help_panel=XPORT
    ),
    eps_critical: float = typer.Option(
        None, help="dblp: ε in critical phases (worker default 0).", rich_help_panel=XPORT
    ),
    eps_stable: float = typer.Option(
        None, help="dblp: ε in stable phases (worker default 0.2).", rich_help_panel=XPORT
    ),
    epsilon: float = typer.Option(
        None,
        help="dblp: pinned ε (allreduce workload; training with --phase off).",
        rich_help_panel=XPORT,
    ),
    optireduce_mode: OptiMode = typer.Option(
        None, help="optireduce timeout" + _d("optireduce_mode"), rich_help_panel=XPORT
    ),
    rescale: bool = typer.Option(
        None, "--rescale", help="optireduce: unbiased mean of what arrived.", rich_help_panel=XPORT
    ),
    t_max_ms: float = typer.Option(
        None, help="Hard cap per round, ms (default 4x calibrated p50).", rich_help_panel=XPORT
    ),
    seed: int = typer.Option(
        None, help="Seed of bursts, ECMP, data and model" + _d("seed"), rich_help_panel=OUT
    ),
    label: str = typer.Option(
        None, help="Name of this variant in reports (default: derived).", rich_help_panel=OUT
    ),
    out: Path = typer.Option(None, help="Results root" + _d("out"), rich_help_panel=OUT),
    config: Path = typer.Option(
        None, help="TOML file with a `run` table of these options.", rich_help_panel=OUT
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the summary as JSON on stdout.", rich_help_panel=OUT
    ),
) -> None:
    """Run one experiment: build the network, play the bursts, train, write results/<run-id>/.

    Example: sudo testbed run --topo fattree --burst heavy --transport dblp
    """
    flags = {name: _val(value) for name, value in locals().items() if name not in ("config",)}
    flags.pop("json_out")
    try:
        spec = build_spec(config, **flags)
        from testbed.experiment import plan

        plan(spec)
    except SpecError as e:
        typer.echo(f"error: invalid spec: {e}", err=True)
        raise typer.Exit(2) from e
    if os.geteuid() != 0:
        typer.echo("error: testbed run needs root (network namespaces, tc): use sudo", err=True)
        raise typer.Exit(2)
    from testbed.experiment import run_experiment

    console = Console(stderr=True)
    progress = Progress(console)
    try:
        outcome = run_experiment(spec, on_event=progress)
    finally:
        progress.close()
    if json_out:
        sys.stdout.write(json.dumps(outcome.summary, indent=2, default=str) + "\n")
    else:
        _print_summary(console, outcome)
    if outcome.status != "ok":
        typer.echo(f"run {outcome.status}: {outcome.reason}", err=True)
        raise typer.Exit(1)


def _print_summary(console: Console, outcome) -> None:
    s = outcome.summary
    console.print(f"[bold]{outcome.status}[/bold] {outcome.run_dir}")
    for key in (
        "wall_s",
        "steps",
        "final_acc",
        "comm_fraction",
        "p50_ms",
        "p99_ms",
        "p99_in_burst_ms",
        "p50_no_burst_ms",
        "delivered_loss_mean",
        "bursts",
    ):
        if key in s:
            console.print(f"  {key:20s} {s[key]}")
    for w in s.get("warnings", []):
        console.print(f"  [yellow]warning[/yellow] {w}")
