"""The worker's command line: who this rank is, where it writes, and its `WorkerSpec`.

The spec's fields are derived flags (workloads/spec.py); `--spec FILE` reads them from JSON
first and each flag given overrides it. What comes back is typed: the spec itself, beside the
identity and output flags, never an untyped namespace.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from workloads.spec import (
    WORKER_WORKLOADS,
    SpecError,
    WorkerSpec,
    add_arguments,
    flags,
    from_arguments,
)


@dataclass(frozen=True)
class WorkerArgs:
    """One rank's parsed command line. Identity flags left out are None: torchrun's
    environment or the defaults fill them (rendezvous.resolve_identity)."""

    rank: int | None
    world: int | None
    master_addr: str | None
    master_port: int | None
    addr: str | None
    out: Path
    run_id: str
    spec_file: Path | None
    spec: WorkerSpec

    def record(self) -> dict[str, Any]:
        """Every flag as resolved, by name (meta.json's `args`): identity, output, the spec."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "spec"}
        return own | {f.name: getattr(self.spec, f.name) for f in flags(WorkerSpec)}


def parse_args(argv: list[str] | None = None, description: str = "") -> WorkerArgs:
    """Identity flags, then the WorkerSpec: `--spec FILE` first, each spec flag given over it.
    A bad value exits 2 naming the flag."""
    p = argparse.ArgumentParser(prog="python -m workloads.train", description=description)
    g = p.add_argument_group("identity (default: torchrun's environment)")
    g.add_argument("--rank", type=int)
    g.add_argument("--world", type=int)
    g.add_argument("--master-addr")
    g.add_argument("--master-port", type=int)
    g.add_argument("--addr", help="UDP bind address (default: the address routing to the master)")
    o = p.add_argument_group("output")
    o.add_argument("--out", type=Path, default=Path("results/worker"), help="run folder")
    o.add_argument("--run-id", default="manual")
    p.add_argument(
        "--spec",
        dest="spec_file",
        type=Path,
        help="the run's WorkerSpec as JSON (the testbed writes one per run); flags override it",
    )
    add_arguments(p, WorkerSpec)
    ns = p.parse_args(argv)
    try:
        spec = from_arguments(WorkerSpec, ns, ns.spec_file)
    except SpecError as e:
        p.error(f"{e.flag}: {e.message}")
    if spec.workload not in WORKER_WORKLOADS:
        p.error(f"--workload: {spec.workload} is a probe the testbed runs; a worker runs "
                f"{' or '.join(WORKER_WORKLOADS)}")  # fmt: skip
    own = {f.name: getattr(ns, f.name) for f in fields(WorkerArgs) if f.name != "spec"}
    return WorkerArgs(**own, spec=spec)
