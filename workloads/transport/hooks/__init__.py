"""DDP communication hooks for every transport, in the shape of torch's `ddp_comm_hooks`: one
hook a module, their shared state in `state`, and here the lookup by transport name.

A hook is `hook(state, bucket) -> torch.futures.Future[Tensor]` and resolves to the bucket's
MEAN over ranks (the transports return the SUM; the hooks divide by N, as `allreduce_hook`
does). Each state produces one `rounds` row (analysis/schema.py) per (bucket, stage); the worker
drains them after each step, so the hooks never touch files.

- `udp_hook` (udp.py): the Transpose AllReduce over UDP under a completion policy.
- `tcp_hook` (tcp.py): a timing wrapper around DDP's own `allreduce_hook` (Gloo over TCP).

Usage::

    state = register_transport(ddp_model, "dblp", TransportConfig(rate_mbps=95), addr="10.0.0.2")
    state.set_context(step=s, train_phase="stable", epsilon=0.1, eps_id=3)  # before each step
    loss.backward(); rows = state.drain_rows()
"""

# No `from __future__ import annotations`: DDP checks the hooks' annotations as real objects.
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from workloads.transport.completion import POLICIES, TCP
from workloads.transport.hooks.state import TensorBucket
from workloads.transport.hooks.tcp import TcpState, tcp_hook
from workloads.transport.hooks.udp import UdpState, udp_hook

__all__ = [
    "TcpState",
    "TensorBucket",
    "UdpState",
    "hook_for",
    "make_state",
    "register_transport",
    "tcp_hook",
    "udp_hook",
]


def hook_for(name: str) -> Callable[[Any, Any], torch.futures.Future]:
    """The DDP hook of transport `name`: Gloo's for tcp, `udp_hook` for every registered
    completion policy (looked up now, so a policy registered after import is served too)."""
    if name == TCP:
        return tcp_hook
    if name in POLICIES:
        return udp_hook
    raise ValueError(f"unknown transport {name!r}; known: {', '.join((*POLICIES, TCP))}")


def make_state(
    name: str,
    config: Any = None,
    *,
    addr: str = "127.0.0.1",
    calibrate_elems: int | None = None,
    process_group: dist.ProcessGroup | None = None,
    reliable_iters: int = 1,
    collective: str = "tar",
) -> TcpState | UdpState:
    """The state for transport `name`; for UDP, peers are found through the Gloo group.

    `collective` "ps" runs the UDP rounds through a parameter server (transport/ps.py), a
    process of its own (`python -m workloads.ps_server`) that must join the same job.

    `calibrate_elems` (the largest bucket, in float32 elements) runs the burst-free calibration
    that sets t_max when the config leaves it None; every rank must pass the same value.
    """
    hook_for(name)  # an unknown name fails here, before any socket or thread
    if name == TCP:
        if collective != "tar":
            raise ValueError(f"collective: {collective} runs over the UDP transports, not tcp")
        return TcpState(process_group)
    from workloads.transport.config import TransportConfig
    from workloads.transport.ps import COLLECTIVES, ParameterServer
    from workloads.transport.tar import TransposeAllReduce

    if collective not in COLLECTIVES:
        raise ValueError(f"collective: {collective!r} is not one of {', '.join(COLLECTIVES)}")
    config = config if config is not None else TransportConfig()
    cls = ParameterServer if collective == "ps" else TransposeAllReduce
    tar = cls.from_process_group(addr, name, config, group=process_group)
    try:
        if config.t_max_ms is None and calibrate_elems:
            tar.calibrate(calibrate_elems)
    except BaseException:
        tar.close()
        raise
    return UdpState(tar, name, config, reliable_iters)


def register_transport(
    ddp_model: torch.nn.parallel.DistributedDataParallel,
    name: str,
    config: Any = None,
    **kwargs: Any,
) -> TcpState | UdpState:
    """Build the state for `name` and register its hook on `ddp_model`; returns the state."""
    state = make_state(name, config, **kwargs)
    ddp_model.register_comm_hook(state, hook_for(name))
    return state
