"""`tcp_hook`: DDP's own `allreduce_hook` (a Gloo ring over TCP), timed, so TCP rounds land
in the same `rounds` rows as the UDP transports'."""

# No `from __future__ import annotations`: DDP checks the hooks' annotations as real objects.
import time
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from workloads.transport.hooks.state import HookState, row
from workloads.transport.schedstat import max_wait_ms, schedstat_waits


class TcpState(HookState):
    """State of `tcp_hook`: stock DDP all-reduce over the Gloo group, timed.

    Hyperparameters:
        process_group: the Gloo group (None = default). Nothing to tune; TCP's own behaviour is
            set per host (`--tcp-rto-min-ms`).
    """

    __slots__ = ("process_group", "world", "iteration", "rounds")

    transport = "tcp"

    def __init__(self, process_group: dist.ProcessGroup | None = None) -> None:
        super().__init__()
        self.process_group = process_group
        self.world = dist.get_world_size(process_group)
        self.iteration = 0
        self.rounds = 0

    def meta(self) -> dict[str, Any]:
        return {"transport": "tcp", "backend": "gloo", "world": self.world}

    def close(self) -> None:
        """Nothing to release: the Gloo group belongs to the worker."""


def tcp_hook(state: TcpState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """`allreduce_hook` with a `rounds` row per bucket: from the hook call to Gloo's completion.

    The latency includes any wait behind the previous bucket in Gloo's queue, as the UDP rows
    do not; with the default bucket cap a model of ~1 M parameters has one or two buckets.
    """
    rnd, it, ctx = state.rounds, state.iteration, state.context
    step, phase, observer, last = ctx.step, ctx.train_phase, state.observer, bucket.is_last()
    state.rounds += 1
    if last:
        state.iteration += 1
    if observer is not None:  # before t0: the handshake is not part of the round
        observer.begin(step)
    nbytes = bucket.buffer().numel() * bucket.buffer().element_size()
    world, rank, index = state.world, dist.get_rank(), bucket.index()
    wait0 = schedstat_waits()
    t0 = time.monotonic()
    fut = default_hooks.allreduce_hook(state.process_group, bucket)

    def record(f: torch.futures.Future) -> torch.Tensor:
        out = f.value()
        t1 = time.monotonic()
        state.sink.add(
            [
                row(
                    rank=rank,
                    round=rnd,
                    iter=step,
                    bucket=index,
                    transport="tcp",
                    stage="total",
                    train_phase=phase,
                    t_start_s=t0,
                    t_end_s=t1,
                    latency_ms=(t1 - t0) * 1e3,
                    # a ring all-reduce sends 2(N-1)/N of the bucket from every rank
                    bytes=int(2 * (world - 1) * nbytes / world),
                    cpu_wait_ms=max_wait_ms(wait0, schedstat_waits()),
                    is_warmup=it == 0,
                )
            ]
        )
        if observer is not None and last:
            observer.end(step)
        return out

    return fut.then(record)
