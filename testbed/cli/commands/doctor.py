"""`testbed doctor`: can a run go on this machine, and with which impairment backend?"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import typer
from rich.console import Console
from rich.table import Table

from testbed.base.capabilities import Capabilities, probe
from testbed.bursts.impairments import choose_impairment


@dataclass(frozen=True)
class Missing:
    what: str
    fix: str


def missing_pieces(caps: Capabilities) -> list[Missing]:
    """What a run needs and this machine lacks, each with its fix."""
    out = []
    if not caps.root:
        out.append(Missing("root", "run testbed as root (namespaces, veths, tc)"))
    if not caps.mnexec:
        out.append(Missing("mnexec", "apt-get install mininet (provides /usr/bin/mnexec)"))
    if not caps.iperf3:
        out.append(Missing("iperf3", "apt-get install iperf3"))
    if shutil.which("ethtool") is None:
        out.append(Missing("ethtool", "apt-get install ethtool (offloads off on every link)"))
    if not caps.torch:
        out.append(Missing("torch", "make install (pip install torch==2.13.0 into .venv)"))
    if caps.root:
        if not caps.htb:
            out.append(Missing("sch_htb", "a kernel with CONFIG_NET_SCH_HTB (link rates)"))
        if not caps.pfifo:
            out.append(Missing("sch_fifo", "a kernel with pfifo/bfifo (shallow queues)"))
        try:
            choose_impairment("auto", caps)
        except ValueError as e:
            out.append(Missing("loss backend", str(e)))
    return out


def doctor(json_out: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """What this kernel can emulate, and what a run will fall back to. Exit 0 if a run can go."""
    caps = probe()
    missing = missing_pieces(caps)
    try:
        backend, reason = choose_impairment("auto", caps)
    except ValueError as e:
        backend, reason = None, str(e)
    if json_out:
        typer.echo(
            json.dumps(
                {
                    "ok": not missing,
                    "capabilities": caps.to_dict(),
                    "impairment": {"backend": backend, "reason": reason},
                    "missing": [m.__dict__ for m in missing],
                    "dilation_cache": _dilation_cache(),
                },
                indent=2,
            )
        )
    else:
        _print(caps, backend, reason, missing)
    if missing:
        raise typer.Exit(1)


def _dilation_cache() -> dict:
    """Where `--dilation auto` keeps what it calibrated, and what it holds."""
    from testbed.run import dilation_cache

    return {"path": str(dilation_cache.cache_path()), "entries": dilation_cache.entries()}


def _print(caps: Capabilities, backend: str | None, reason: str, missing: list[Missing]) -> None:
    con = Console()
    t = Table(title=f"testbed doctor — kernel {caps.kernel}")
    t.add_column("check")
    t.add_column("works")
    for key, value in caps.to_dict().items():
        if key != "kernel":
            t.add_row(key, "[green]yes[/]" if value else "[red]no[/]")
    con.print(t)
    if not caps.root:
        con.print("kernel probes need root: run `testbed doctor` as root")
    con.print(f"impairment backend (auto): [bold]{backend or 'none'}[/] — {reason}")
    cache = _dilation_cache()
    con.print(
        f"--dilation auto: {len(cache['entries'])} network shape(s) calibrated, kept in "
        f"{cache['path']} (delete it to calibrate again)"
    )
    for m in missing:
        con.print(f"[red]missing[/] {m.what}: {m.fix}")
    con.print("[green]a run can go[/]" if not missing else "[red]a run cannot go[/]")
