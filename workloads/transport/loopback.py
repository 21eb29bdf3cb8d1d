"""A job of `world` long-lived rank processes on 127.0.0.1, driven over pipes.

Used by the benchmark and by the loopback integration tests: spawning torch processes and a
Gloo group costs seconds on a 2-core machine, so one job serves many cases. Each case builds a
TransposeAllReduce per rank (addresses exchanged through the Gloo group, as under torchrun),
runs seeded rounds, and reports per-rank results; nothing here is mocked: real sockets, real
kernel, real Gloo for the TCP baseline and the reference sums.

With `server=True` the job also holds a parameter-server process (Case.collective "ps",
transport/ps.py): it joins each ps case's transport group through the job's store, as the
real server does, and reports its side of the measured rounds as rank N.

Round t at rank r reduces base[(r + t) % N], so every rank knows the exact sum (sum of the
bases, in float64) without extra traffic, and a datagram that lands in the wrong round shows
up as an error.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import random
import socket
import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from workloads.transport.config import TransportConfig

CASE_TIMEOUT_S = 300.0
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Case:
    """One batch of rounds for every rank. transport: a registered policy, or tcp."""

    transport: str
    n_elems: int
    rounds: int
    config: dict[str, Any] = field(default_factory=dict)
    epsilon: float = 0.0  # each round's loss budget (dblp, mlt)
    calibrate_rounds: int = 0  # 0: no calibration (t_max from config or the model)
    compare_gloo: bool = False  # also all_reduce each round's input over Gloo and compare
    seed: int = 0
    collective: str = "tar"  # or "ps": through the job's parameter-server process
    index: int = 0  # the job's case number (set by LoopbackJob.run): names the ps group


@dataclass(frozen=True)
class RankResult:
    rank: int
    stats: list[dict[str, Any]]  # RoundStats as dicts (tcp: latency/bytes only)
    err_exact: list[float]  # max |result - exact sum| per round (SUM units)
    err_gloo: list[float]  # max |result - Gloo all_reduce| per round (if compared)
    cpu_s: float  # process CPU seconds spent inside the rounds
    p50_ms: float | None  # calibrated p50 (if calibrated)
    t_max_ms: float | None
    rcvbuf_bytes: int


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def udp_ports_free(base: int, count: int) -> bool:
    socks = []
    try:
        for port in range(base, base + count):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(s)
            s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


def pick_udp_base(world: int, k: int, rng: random.Random) -> int:
    """A base port whose world*k UDP ports are free now (other jobs may share loopback)."""
    for _ in range(50):
        base = rng.randrange(20000, 60000 - world * k)
        if udp_ports_free(base, world * k):
            return base
    raise RuntimeError("no free UDP port range found on 127.0.0.1")


def _bases(n: int, world: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng([seed, n, world])
    bases = [rng.standard_normal(n).astype(np.float32) for _ in range(world)]
    exact = np.sum(np.stack(bases).astype(np.float64), axis=0) if n else np.zeros(0)
    return bases, exact


def _run_case(rank: int, world: int, case: Case) -> RankResult:
    import torch
    import torch.distributed as dist

    from workloads.transport.ps import ParameterServer
    from workloads.transport.tar import TransposeAllReduce

    bases, exact = _bases(case.n_elems, world, case.seed)
    stats, err_exact, err_gloo = [], [], []
    cpu = 0.0
    p50 = t_max = None
    rcvbuf = 0
    if case.transport == "tcp":
        dist.barrier()
        for t in range(case.rounds):
            x = torch.from_numpy(bases[(rank + t) % world].copy())
            c0, t0 = time.process_time(), time.monotonic()
            dist.all_reduce(x)
            t1 = time.monotonic()
            cpu += time.process_time() - c0
            ring_bytes = int(2 * (world - 1) / world * 4 * case.n_elems)
            stats.append(
                {
                    "round": t,
                    "latency_ms": (t1 - t0) * 1e3,
                    "bytes": ring_bytes,
                    "delivered_loss": 0.0,
                    "cap_hit": False,
                    "epsilon": 0.0,
                }
            )
            err_exact.append(float(np.abs(x.numpy() - exact).max()) if case.n_elems else 0.0)
        return RankResult(rank, stats, err_exact, err_gloo, cpu, None, None, 0)
    cfg = TransportConfig(**case.config)
    if case.collective == "ps":
        tar = ParameterServer.from_process_group(
            "127.0.0.1", case.transport, cfg, name=str(case.index)
        )
    else:
        tar = TransposeAllReduce.from_process_group("127.0.0.1", case.transport, cfg)
    try:
        rcvbuf = tar.rcvbuf_bytes
        if case.calibrate_rounds:
            p50 = tar.calibrate(case.n_elems, case.calibrate_rounds)
        t_max = tar.t_max_ms
        dist.barrier()
        for t in range(case.rounds):
            data = bases[(rank + t) % world]
            c0 = time.process_time()
            out, st = tar.allreduce(data, epsilon=case.epsilon)
            cpu += time.process_time() - c0
            stats.append(asdict(st))
            err_exact.append(float(np.abs(out - exact).max()) if case.n_elems else 0.0)
            if case.compare_gloo:
                ref = torch.from_numpy(data.copy())
                dist.all_reduce(ref)
                diff = np.abs(out - ref.numpy())
                err_gloo.append(float(diff.max()) if case.n_elems else 0.0)
        dist.barrier()
    finally:
        tar.close()
    return RankResult(rank, stats, err_exact, err_gloo, cpu, p50, t_max, rcvbuf)


def _worker(rank: int, world: int, port: int, conn) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=CASE_TIMEOUT_S),
    )
    conn.send(("ready", rank))
    try:
        _serve_cases(conn, f"rank {rank}", lambda case: _run_case(rank, world, case))
    finally:
        dist.destroy_process_group()


def _serve_cases(conn, who: str, run) -> None:
    """Run each case the parent sends until it sends None; an error is reported, not raised,
    so the parent fails that case and the process stays for the next."""
    while (case := conn.recv()) is not None:
        try:
            conn.send(("ok", run(case)))
        except Exception as e:  # reported to the parent, which fails the case
            conn.send(("error", f"{who}: {type(e).__name__}: {e}"))


def _serve_case(workers: int, port: int, case: Case) -> RankResult:
    """The server's side of one ps case: every announced round, then its measured ones."""
    from workloads.transport.ps import ParameterServer

    cfg = TransportConfig(**case.config)
    ps = ParameterServer.join_as_server(
        "127.0.0.1", case.transport, cfg, "127.0.0.1", port, workers, name=str(case.index)
    )
    stats, cpu = [], 0.0
    try:
        rcvbuf = ps.rcvbuf_bytes
        while (a := ps.next_round()) is not None:
            c0 = time.process_time()
            _, st = ps.serve(a)
            cpu += time.process_time() - c0
            stats.append(asdict(st))
    finally:
        ps.close()
    measured = stats[len(stats) - case.rounds :]  # calibration rounds came first
    return RankResult(workers, measured, [], [], cpu, ps.p50_ms, ps.t_max_ms, rcvbuf)


def _server(workers: int, port: int, conn) -> None:
    import torch

    torch.set_num_threads(1)
    conn.send(("ready", workers))
    _serve_cases(conn, "server", lambda case: _serve_case(workers, port, case))


class LoopbackJob:
    """`world` rank processes with one Gloo group, reused across cases (and, with `server`,
    a parameter-server process for the ps cases)."""

    def __init__(self, world: int, seed: int = 0, server: bool = False) -> None:
        self.world = world
        self.cases = 0
        self.rng = random.Random(seed ^ 0x5EED)
        ctx = mp.get_context("spawn")
        port = free_tcp_port()
        self.conns, self.procs, self.server = [], [], None
        for r in range(world):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(r, world, port, child), daemon=True)
            p.start()
            self.conns.append(parent)
            self.procs.append(p)
        self.server = None
        if server:
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_server, args=(world, port, child), daemon=True)
            p.start()
            self.server = parent
            self.procs.append(p)
        for c in self._all():
            self._recv(c, START_TIMEOUT_S)

    def _all(self) -> list:
        return self.conns + ([self.server] if self.server is not None else [])

    def _recv(self, conn, timeout_s: float):
        if not conn.poll(timeout_s):
            self.close()
            raise TimeoutError(f"loopback worker silent for {timeout_s:.0f} s")
        status, payload = conn.recv()
        if status == "error":
            raise RuntimeError(payload)
        return payload

    def run(self, case: Case) -> list[RankResult]:
        cfg = dict(case.config)
        ps = case.collective == "ps"
        if ps and self.server is None:
            raise ValueError("a ps case needs LoopbackJob(..., server=True)")
        if case.transport != "tcp" and "base_port" not in cfg:
            k = cfg.get("ports_per_peer", TransportConfig.ports_per_peer)
            cfg["base_port"] = pick_udp_base(self.world + ps, k, self.rng)
        self.cases += 1
        case = Case(**{**asdict(case), "config": cfg, "index": self.cases})
        conns = self._all() if ps else self.conns
        for c in conns:
            c.send(case)
        results, errors = [], []
        for c in conns:
            try:
                results.append(self._recv(c, CASE_TIMEOUT_S))
            except RuntimeError as e:
                errors.append(str(e))
        if errors:
            raise RuntimeError("; ".join(errors))
        return sorted(results, key=lambda r: r.rank)

    def close(self) -> None:
        for c in self._all():
            with contextlib.suppress(BrokenPipeError, OSError):
                c.send(None)
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.terminate()
                p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
        self.conns, self.procs, self.server = [], [], None

    def __enter__(self) -> LoopbackJob:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
