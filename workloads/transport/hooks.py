"""DDP communication hooks for every transport, in the shape of torch's `ddp_comm_hooks`.

A hook is `hook(state, bucket) -> torch.futures.Future[Tensor]` and resolves to the bucket's
MEAN over ranks (the transports return the SUM; the hooks divide by N, as `allreduce_hook`
does). Each state produces one `rounds` row (analysis/schema.py) per (bucket, stage); the worker
drains them after each step, so the hooks never touch files.

- `udp_hook`: the Transpose AllReduce over UDP under the state's completion policy (dblp,
  optireduce, reliable, or any policy registered in completion.POLICIES), run on ONE transport
  thread fed by a queue, so a bucket's round overlaps the rest of backward. DDP rebuilds its
  buckets after iteration 0, so iteration 0 always runs the reliable path. A failure resolves
  the future with the exception (DDP raises it from backward) — never a hang.
- `tcp_hook`: a timing wrapper around DDP's own `allreduce_hook` (Gloo ring over TCP), so TCP
  rounds land in the same rows.

Usage::

    state = register_transport(ddp_model, "dblp", TransportConfig(rate_mbps=95), addr="10.0.0.2")
    state.set_context(step=s, train_phase="stable", epsilon=0.1, eps_id=3)  # before each step
    loss.backward(); rows = state.drain_rows()
"""

# No `from __future__ import annotations`: DDP checks the hooks' annotations as real objects.
import dataclasses
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from workloads.transport.completion import POLICIES, TCP
from workloads.transport.schedstat import max_wait_ms, schedstat_waits

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

#: Seconds the transport thread may take to stop at close().
_JOIN_TIMEOUT_S = 10.0


class TensorBucket:
    """A one-tensor stand-in for `dist.GradBucket`, so the allreduce workload (no model) runs
    exactly the hooks training runs."""

    __slots__ = ("_tensor", "_index", "_last")

    def __init__(self, tensor: torch.Tensor, index: int = 0, is_last: bool = True) -> None:
        self._tensor, self._index, self._last = tensor, index, is_last

    def buffer(self) -> torch.Tensor:
        return self._tensor

    def index(self) -> int:
        return self._index

    def is_last(self) -> bool:
        return self._last


class _RowSink:
    """Rows produced on the transport / Gloo threads, drained on the training thread."""

    __slots__ = ("_rows", "_lock")

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, rows: list[dict[str, Any]]) -> None:
        with self._lock:
            self._rows.extend(rows)

    def drain(self) -> list[dict[str, Any]]:
        with self._lock:
            rows, self._rows = self._rows, []
        return rows


def _row(**fields: Any) -> dict[str, Any]:
    base = {
        "bytes": 0,
        "pkts_expected": 0,
        "pkts_received": 0,
        "delivered_loss": 0.0,
        "epsilon": 0.0,
        "nacks": 0,
        "retx_pkts": 0,
        "cap_hit": False,
        "bad_dgrams": 0,
        "loop_late_ms": float("nan"),
    }
    base.update(fields)
    return base


class _Context:
    """What the worker tells the hooks before each step (read by the transport thread)."""

    __slots__ = ("step", "train_phase", "epsilon", "eps_id")

    def __init__(self) -> None:
        self.step, self.train_phase, self.epsilon, self.eps_id = 0, "critical", 0.0, 0


class TcpState:
    """State of `tcp_hook`: stock DDP all-reduce over the Gloo group, timed.

    Hyperparameters:
        process_group: the Gloo group (None = default). Nothing to tune; TCP's own behaviour is
            set per host (`--tcp-rto-min-ms`).
    """

    __slots__ = ("process_group", "world", "iteration", "rounds", "context", "sink")

    transport = "tcp"

    def __init__(self, process_group: dist.ProcessGroup | None = None) -> None:
        self.process_group = process_group
        self.world = dist.get_world_size(process_group)
        self.iteration = 0
        self.rounds = 0
        self.context = _Context()
        self.sink = _RowSink()

    def set_context(self, step: int, train_phase: str, epsilon: float, eps_id: int) -> None:
        c = self.context
        c.step, c.train_phase, c.epsilon, c.eps_id = step, train_phase, epsilon, eps_id

    def drain_rows(self) -> list[dict[str, Any]]:
        return self.sink.drain()

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
    step, phase = ctx.step, ctx.train_phase
    state.rounds += 1
    if bucket.is_last():
        state.iteration += 1
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
                _row(
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
        return out

    return fut.then(record)


@dataclasses.dataclass(frozen=True, slots=True)
class _Job:
    """One bucket's round, with the step context captured when DDP handed it over."""

    tensor: torch.Tensor
    future: torch.futures.Future
    bucket: int
    step: int
    iteration: int
    phase: str
    epsilon: float
    eps_id: int


class UdpState:
    """State of `udp_hook`: one TransposeAllReduce under one completion policy.

    Hyperparameters:
        policy: a name in completion.POLICIES ("dblp", "optireduce", "reliable", ...).
        config: the `TransportConfig` (pacing rate, t_max, ports, OptiReduce mode, rescaling).
            Pace a little under the host link rate (the orchestrator uses 0.95 x bw) so the
            pacer, not the first queue, decides when packets leave.
        reliable_iters: leading iterations that run the reliable path. 1 is the minimum (DDP
            rebuilds its buckets after iteration 0); raise it for a longer exact start, as
            PowerSGD's `start_powerSGD_iter` does — the phase controller's warm-up is the
            cheaper knob, since it still ends rounds within ε_critical.
    ε comes from `set_context` (the phase controller), once per step; policies that do not
    bound loss ignore it. `suspect` totals the datagrams the transport dropped as suspect input,
    by reason, over the whole run (for run.json; each round row carries its own count).
    """

    __slots__ = (
        "policy",
        "config",
        "reliable_iters",
        "tar",
        "world",
        "rank",
        "iteration",
        "context",
        "sink",
        "suspect",
        "cpu_ms",
        "sent_bytes",
        "_queue",
        "_thread",
        "_error",
    )

    def __init__(self, tar: Any, policy: str, config: Any, reliable_iters: int = 1) -> None:
        if reliable_iters < 1:
            raise ValueError("reliable_iters must be >= 1: DDP rebuilds buckets after iteration 0")
        self.policy = policy
        self.config = config
        self.reliable_iters = reliable_iters
        self.tar = tar
        self.world = tar.world
        self.rank = tar.rank
        self.iteration = 0
        self.context = _Context()
        self.sink = _RowSink()
        self.suspect: Counter[str] = Counter()
        self.cpu_ms = 0.0  # the event loop's CPU time over the run, and the payload it sent
        self.sent_bytes = 0
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name=f"{policy}-transport", daemon=True)
        self._thread.start()

    def set_context(self, step: int, train_phase: str, epsilon: float, eps_id: int) -> None:
        c = self.context
        c.step, c.train_phase, c.epsilon, c.eps_id = step, train_phase, epsilon, eps_id

    def drain_rows(self) -> list[dict[str, Any]]:
        return self.sink.drain()

    def submit(self, bucket: Any) -> torch.futures.Future[torch.Tensor]:
        """Queue one bucket's round."""
        fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        ctx = self.context
        job = _Job(
            tensor=bucket.buffer(),
            future=fut,
            bucket=bucket.index(),
            step=ctx.step,
            iteration=self.iteration,
            phase=ctx.train_phase,
            epsilon=ctx.epsilon,
            eps_id=ctx.eps_id,
        )
        if bucket.is_last():
            self.iteration += 1
        self._queue.put(job)
        return fut

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if self._error is not None:
                job.future.set_exception(
                    RuntimeError(f"{self.policy} transport failed earlier: {self._error!r}")
                )
                continue
            try:
                self._run(job)
            except BaseException as e:  # noqa: BLE001 — every failure must reach the future
                self._error = e
                job.future.set_exception(e)

    def _run(self, job: _Job) -> None:
        t = job.tensor
        if t.dtype != torch.float32 or not t.is_contiguous():
            raise TypeError(f"bucket must be contiguous float32, got {t.dtype}")
        data = t.detach().view(-1).numpy()
        warm = job.iteration < self.reliable_iters
        total, stats = self.tar.allreduce(
            data, epsilon=job.epsilon, eps_id=job.eps_id, reliable=warm
        )
        self.suspect.update(stats.suspect)
        self.cpu_ms += stats.cpu_ms
        self.sent_bytes += stats.bytes
        self.sink.add(self._rows(job, stats, warm))
        out = torch.from_numpy(np.asarray(total, dtype=np.float32)).view_as(t)
        # into the bucket's own buffer: the transport may reuse its output array next round
        t.copy_(out).div_(self.world)
        job.future.set_result(t)

    def _rows(self, job: _Job, s: Any, warm: bool) -> list[dict[str, Any]]:
        common = {
            "rank": self.rank,
            "round": int(s.round),
            "iter": job.step,
            "bucket": job.bucket,
            "transport": self.policy,
            "train_phase": job.phase,
            "is_warmup": warm,
        }
        rows = [
            _row(
                **common,
                stage="total",
                t_start_s=float(s.t_start_s),
                t_end_s=float(s.t_end_s),
                latency_ms=float(s.latency_ms),
                bytes=int(s.bytes),
                pkts_expected=int(s.pkts_expected),
                pkts_received=int(s.pkts_received),
                delivered_loss=float(s.delivered_loss),
                epsilon=float(s.epsilon),
                nacks=int(s.nacks),
                retx_pkts=int(s.retx_pkts),
                cap_hit=bool(s.cap_hit),
                bad_dgrams=int(s.bad_dgrams),
                cpu_wait_ms=float(s.cpu_wait_ms),
                loop_late_ms=float(s.loop_late_ms),
            )
        ]
        scatter_ms = getattr(s, "scatter_ms", None)
        gather_ms = getattr(s, "gather_ms", None)
        if scatter_ms is not None and gather_ms is not None:
            # stage rows carry timing only; loss and packet counts live on the total row
            t_mid = float(s.t_start_s) + float(scatter_ms) / 1e3
            for stage, a, b, ms in (
                ("scatter", float(s.t_start_s), t_mid, scatter_ms),
                ("gather", t_mid, t_mid + float(gather_ms) / 1e3, gather_ms),
            ):
                rows.append(
                    _row(
                        **common,
                        stage=stage,
                        t_start_s=a,
                        t_end_s=b,
                        latency_ms=float(ms),
                        epsilon=float(s.epsilon),
                        cpu_wait_ms=0.0,
                    )
                )
        return rows

    def meta(self) -> dict[str, Any]:
        cfg = self.config
        meta: dict[str, Any] = {
            "transport": self.policy,
            "world": self.world,
            "reliable_iters": self.reliable_iters,
            "config": dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else repr(cfg),
            "suspect": dict(self.suspect),
            "engine_cpu_ms": self.cpu_ms,
            "sent_bytes": self.sent_bytes,
        }
        meta["gap_ms"] = self.tar.gap_s * 1e3  # the idle gap: the fidelity verdict's yardstick
        meta["fastpath"] = self.tar.fastpath
        for attr in ("t_max_ms", "p50_ms", "rcvbuf_bytes", "sndbuf_bytes"):
            value = getattr(self.tar, attr, None)
            if value is not None and not callable(value):
                meta[attr] = value
        return meta

    def close(self) -> None:
        """Stop the transport thread (after any queued round) and release the sockets."""
        self._queue.put(None)
        self._thread.join(timeout=_JOIN_TIMEOUT_S)
        self.tar.close()


def udp_hook(state: UdpState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Transpose AllReduce over UDP; when a round may end is the state's policy's business."""
    return state.submit(bucket)


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
) -> TcpState | UdpState:
    """The state for transport `name`; for UDP, peers are found through the Gloo group.

    `calibrate_elems` (the largest bucket, in float32 elements) runs the burst-free calibration
    that sets t_max when the config leaves it None; every rank must pass the same value.
    """
    hook_for(name)  # an unknown name fails here, before any socket or thread
    if name == TCP:
        return TcpState(process_group)
    from workloads.transport.config import TransportConfig
    from workloads.transport.tar import TransposeAllReduce

    config = config if config is not None else TransportConfig()
    tar = TransposeAllReduce.from_process_group(addr, name, config, group=process_group)
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
