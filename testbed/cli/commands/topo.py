"""`testbed topo show|check|up`: describe, verify and bring up a topology."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from testbed.base.terminal import console
from testbed.cli.commands.options import spec_options
from testbed.spec import TOPOLOGY_FIELDS, RunSpec, SpecError, build_spec
from topologies import Topology

app = typer.Typer(help="Describe (show), verify (check) and bring up (up) a topology.",
                  no_args_is_help=True)  # fmt: skip

JSON = typer.Option(False, "--json", help="machine-readable output")
SUMMARY_KEYS = ("reachable_pairs", "total_pairs", "iperf3_mbps", "configured_mbps",
                "parallel_mbps", "uplinks", "uplinks_used", "bringup_s", "teardown_s")  # fmt: skip


def make_topology(**fields: Any) -> tuple[Topology, RunSpec]:
    """The topology the options describe — the one `testbed run` builds from the same flags —
    and the spec; a bad option is a usage error (exit 2) naming it."""
    try:
        spec = build_spec(**fields)
        return spec.topology(), spec
    except SpecError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None


@contextlib.contextmanager
def _fatal_errors() -> Iterator[None]:
    """Not root, a kernel refusal, a link the kernel cannot emulate: one line and exit 1."""
    from testbed.base.kernel import KernelError

    try:
        yield
    except (PermissionError, KernelError, ValueError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


@app.command("show")
@spec_options(RunSpec, TOPOLOGY_FIELDS)
def show(
    json_out: bool = JSON,
    png: Path | None = typer.Option(None, "--png", help="draw the topology (tiers as rows)"),
    **fields: Any,
) -> None:
    """Counts, addresses and links of a topology (no root needed)."""
    if png is not None and not png.parent.is_dir():
        typer.echo(f"error: --png: folder {png.parent} does not exist", err=True)
        raise typer.Exit(2)
    t, _ = make_topology(**fields)
    if png is not None:
        from testbed.network.topodraw import draw

        try:
            draw(t, png)
        except OSError as e:
            typer.echo(f"error: --png: cannot write {png}: {e.strerror}", err=True)
            raise typer.Exit(2) from None
    if json_out:
        typer.echo(json.dumps(t.summary(), indent=2))
        return
    con = console()
    tiers: dict[str, int] = {}
    for node in t.nodes:
        tiers[node.tier] = tiers.get(node.tier, 0) + 1
    per_tier = ", ".join(f"{v} {k}" for k, v in tiers.items())
    con.print(f"[bold]{t.name}[/]: {len(t.hosts)} hosts, {len(t.routers)} routers, "
              f"{len(t.links)} links ({per_tier})")  # fmt: skip
    hosts_t = Table("host", "address", "gateway", "router", title="hosts")
    for h in t.hosts:
        hosts_t.add_row(h.name, t.host_ip(h.name), t.gateway(h.name), t.access_router(h.name))
    con.print(hosts_t)
    links_t = Table("link (a = nearer hosts)", "Mbit/s", "queue", "delay ms", title="links")
    for lk in t.links:
        links_t.add_row(lk.name, f"{lk.mbps:g}", str(lk.queue), f"{lk.delay_ms:g}")
    con.print(links_t)
    if png is not None:
        con.print(f"drawing: {png}")


@app.command("check")
@spec_options(RunSpec, (*TOPOLOGY_FIELDS, "seed"))
def check(
    json_out: bool = JSON,
    seconds: float = typer.Option(3.0, "--seconds", help="duration of each iperf3 test"),
    flows: int = typer.Option(8, "--flows", help="parallel flows of the ECMP test"),
    **fields: Any,
) -> None:
    """Bring the network up, test all pairs, iperf3 throughput and ECMP spread; tear down.

    Exits 1 if a pair is unreachable or iperf3 gets < 90% of the configured rate.
    """
    from testbed.network import netcheck

    t, spec = make_topology(**fields)
    with _fatal_errors():
        result, ok = netcheck.check(t, spec.seed, seconds, flows)
    if json_out:
        typer.echo(json.dumps(result, indent=2))
    else:
        tbl = Table("measure", "value", title=f"topo check: {t.name}")
        for key in SUMMARY_KEYS:
            tbl.add_row(key, str(result[key]))
        console().print(tbl)
        for a, b in result["unreachable"]:
            typer.echo(f"unreachable: {a} -> {b}", err=True)
    if not ok:
        raise typer.Exit(1)


@app.command("up")
@spec_options(RunSpec, (*TOPOLOGY_FIELDS, "seed"))
def up(
    cli: bool = typer.Option(False, "--cli", help="open Mininet's CLI (`h1 ping h16`)"),
    **fields: Any,
) -> None:
    """Bring the network up until Ctrl-C (or, with --cli, until you leave the CLI); tear down."""
    from testbed.network.live import live_network

    t, spec = make_topology(**fields)
    t0 = time.monotonic()
    try:
        with _fatal_errors(), live_network(t, seed=spec.seed) as net:
            typer.echo(f"{t.name} up in {time.monotonic() - t0:.2f} s: {len(t.hosts)} hosts, "
                       f"{len(t.routers)} routers (state: {net.state.path})")  # fmt: skip
            if cli:
                from mininet.cli import CLI

                CLI(net.mininet)
            else:
                typer.echo("Ctrl-C tears it down")
                while True:
                    signal.pause()
    except KeyboardInterrupt:
        pass
    typer.echo("torn down")
