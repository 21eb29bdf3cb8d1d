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

import typer
from rich.console import Console

from testbed.spec import SpecError, build_spec


class TopoName(StrEnum):
    fattree = "fattree"
    leafspine = "leafspine"
    dumbbell = "dumbbell"
    star = "star"


class TransportName(StrEnum):
    dblp = "dblp"
    optireduce = "optireduce"
    reliable = "reliable"
    tcp = "tcp"


class WorkloadName(StrEnum):
    train = "train"
    allreduce = "allreduce"
    iperf3 = "iperf3"
    ping = "ping"


class ImpairName(StrEnum):
    auto = "auto"
    netem = "netem"
    iptables = "iptables"
    nft = "nft"


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


def run(
    topo: TopoName = typer.Option(None, help="Built-in topology [default: fattree]."),
    topo_file: Path = typer.Option(None, help="Custom topology TOML (nodes, tiers, links)."),
    k: int = typer.Option(None, help="Fat-tree arity, even >= 2 [default: 4]."),
    bw: float = typer.Option(None, help="Link rate in Mbit/s [default: 100]."),
    queue: int = typer.Option(None, help="Egress queue limit in packets (shallow) [default: 50]."),
    burst: str = typer.Option(None, help="Burst preset (`testbed bursts list`) or a TOML file."),
    impair: ImpairName = typer.Option(None, help="Loss mechanism [default: auto]."),
    transport: TransportName = typer.Option(None, help="Gradient transport [default: dblp]."),
    workload: WorkloadName = typer.Option(None, help="What runs [default: train]."),
    model: str = typer.Option(None, help="cnn (digits) or resnet (synthetic CIFAR)."),
    workers: int = typer.Option(None, help="DDP ranks, one per host [default: 4]."),
    epochs: int = typer.Option(None, help="Training epochs."),
    steps: int = typer.Option(None, help="Cap on training steps."),
    bucket_cap_mb: float = typer.Option(None, help="DDP bucket cap, all transports."),
    tcp_rto_min_ms: float = typer.Option(None, help="tcp_rto_min in every host [default: 200]."),
    epsilon: float = typer.Option(None, help="dblp loss budget (allreduce workload, phase off)."),
    phase: str = typer.Option(None, help="dblp phase controller: on|off."),
    optireduce_mode: str = typer.Option(None, help="optireduce: adaptive|fixed."),
    size_mib: float = typer.Option(None, help="allreduce workload: bucket size, MiB."),
    rounds: int = typer.Option(None, help="allreduce workload: rounds."),
    interval_ms: float = typer.Option(None, help="allreduce workload: compute gap, ms."),
    probe_src: str = typer.Option(None, help="iperf3/ping workload: source host."),
    probe_dst: str = typer.Option(None, help="iperf3/ping workload: destination host."),
    duration_s: float = typer.Option(None, help="iperf3/ping workload: seconds."),
    seed: int = typer.Option(None, help="Seed of bursts, ECMP hashing, data and model [0]."),
    out: Path = typer.Option(None, help="Results root [default: results/]."),
    config: Path = typer.Option(None, help="TOML file with a [run] table of these options."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
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
