"""What a rank sets up from its spec and says about itself, in both workloads: the transport's
and the phase controller's settings, and the meta.json record."""

from __future__ import annotations

import os
import platform
import socket
import time
from pathlib import Path
from typing import Any

import torch

from workloads.args import WorkerArgs
from workloads.provenance import versions
from workloads.rendezvous import Identity
from workloads.spec import WorkerSpec
from workloads.transport.completion import TCP, transport_traits
from workloads.transport.config import TransportConfig
from workloads.transport.phase import PhaseConfig


def transport_config(spec: WorkerSpec) -> TransportConfig | None:
    """The UDP transport's settings (None for tcp, which Gloo carries)."""
    return None if spec.transport == TCP else spec.transport_config()


def phase_config(spec: WorkerSpec) -> PhaseConfig:
    """The controller's settings: the spec's where given (not None), its own defaults elsewhere.
    A transport whose ε is one fixed tolerance (uses ε, not phase-aware: mlt) takes the pinned
    path whatever `--phase` says; the phases are still labelled."""
    tuned = ("eps_critical", "eps_stable", "checkpoint_every", "warmup_steps")
    given = {k: getattr(spec, k) for k in tuned if getattr(spec, k) is not None}
    traits = transport_traits(spec.transport)
    fixed = traits.uses_epsilon and not traits.phase_aware
    if (
        spec.phase == "paper" and not fixed
    ):  # P_low / P_high mean something (and are recorded) only here
        given |= {"p_low": spec.p_low, "p_gap": spec.p_gap}
    mode = "off" if fixed else spec.phase
    return PhaseConfig(**given, mode=mode, pinned_epsilon=spec.epsilon)


def _boot_id() -> str | None:
    """This boot's id: ranks sharing it share CLOCK_MONOTONIC (Linux; None elsewhere)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def base_meta(args: WorkerArgs, ident: Identity, state: Any) -> dict[str, Any]:
    """What a rank says about itself; `testbed ingest` builds a torchrun run's run.json from
    these (spec, versions, host, clocks), the testbed reads the transport's parameters."""
    return {
        "rank": ident.rank,
        "world": ident.world,
        "addr": ident.addr,
        "master": f"{ident.master_addr}:{ident.master_port}",
        "launcher": "torchrun" if ident.from_env else "flags",
        "host": socket.gethostname(),
        "boot_id": _boot_id(),
        "kernel": platform.release(),
        "nproc": os.cpu_count(),
        # the same instant on both clocks: rows' monotonic times map to wall-clock time
        "started": {"realtime_s": time.time(), "monotonic_s": time.monotonic()},
        "gloo_ifname": os.environ.get("GLOO_SOCKET_IFNAME"),
        "workload": args.spec.workload,
        "spec": args.spec.model_dump(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in args.record().items()},
        "versions": versions(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "transport_params": state.meta(),
    }
