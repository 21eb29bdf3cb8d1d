"""One DDP rank: `python -m workloads.train` (the worker CLI contract in notes/contracts.md).

Its knobs are the fields of `WorkerSpec` (workloads/spec.py), one flag each; `--spec FILE` reads
them from JSON first and the flags given override it. The testbed launches it inside a Mininet
host with `--spec <run>/worker_spec.json` and the rank's identity (`--rank --world
--master-addr --master-port --addr --out --run-id`). It runs unchanged by hand or under
torchrun (identity from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT), e.g. on two machines:

    torchrun --nnodes 2 --nproc-per-node 1 --node-rank R --master-addr HOST0 --master-port 29500 \\
        -m workloads.train --transport dblp --eps-stable 0.1 --out results/manual

Gloo carries control (rendezvous, the phase broadcast, evaluation and drift) and, for `tcp`, the
gradients; the UDP transports carry gradients through their DDP comm hooks. Each rank writes
DIR/rank{R}/{rounds,steps}.jsonl and meta.json; rank 0 also evals.jsonl and the stdout events.
Everything that is not a gradient round (phase broadcast, evaluation, drift, resync) happens
between steps, outside the timed rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import math
import os
import platform
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from workloads import datasets
from workloads.models import build_model, param_count
from workloads.provenance import versions
from workloads.recorder import RankRecorder, emit
from workloads.spec import (
    MASTER_PORT,
    WORKER_WORKLOADS,
    SpecError,
    WorkerSpec,
    add_arguments,
    from_arguments,
)
from workloads.transport.hooks import TensorBucket, hook_for, make_state, register_transport
from workloads.transport.phase import PhaseConfig, PhaseController

#: Bound on every Gloo collective and on the rendezvous.
GLOO_TIMEOUT_S = 120.0
MOMENTUM = 0.9
LR_DECAY = 0.1
#: LR decays at these fractions of the run (rounded down to a phase checkpoint).
LR_DECAY_AT = (0.5, 0.75)
EVAL_BATCH = 256
_SIOCGIFADDR = 0x8915


@dataclass(frozen=True)
class Identity:
    rank: int
    world: int
    master_addr: str
    master_port: int
    addr: str  # this rank's UDP bind address
    from_env: bool  # launched by torchrun: rendezvous through its store (env://)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Identity flags, then the WorkerSpec: `--spec FILE` first, each spec flag given over it.

    The result holds the identity (rank, world, master_addr, master_port, addr, out, run_id)
    and every WorkerSpec field by its name; a bad value exits 2 naming the flag."""
    p = argparse.ArgumentParser(
        prog="python -m workloads.train", description=__doc__.split("\n")[0]
    )
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
    args = p.parse_args(argv)
    try:
        spec = from_arguments(WorkerSpec, args, args.spec_file)
    except SpecError as e:
        p.error(f"{e.flag}: {e.message}")
    if spec.workload not in WORKER_WORKLOADS:
        p.error(f"--workload: {spec.workload} is a probe the testbed runs; a worker runs "
                f"{' or '.join(WORKER_WORKLOADS)}")  # fmt: skip
    return argparse.Namespace(**(vars(args) | spec.model_dump()))


def _route_source(dest: str, port: int) -> str:
    """The local address the kernel would use towards dest (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((dest, port))
        return s.getsockname()[0]


def resolve_identity(args: argparse.Namespace) -> Identity:
    env = os.environ
    rank = args.rank if args.rank is not None else int(env.get("RANK", "0"))
    world = args.world if args.world is not None else int(env.get("WORLD_SIZE", "1"))
    master = args.master_addr or env.get("MASTER_ADDR", "127.0.0.1")
    port = args.master_port or int(env.get("MASTER_PORT", MASTER_PORT))
    if not 0 <= rank < world:
        raise SystemExit(f"rank {rank} outside world {world}")
    addr = args.addr or _route_source(master, port)
    from_env = args.rank is None and "RANK" in env and "MASTER_ADDR" in env
    return Identity(rank, world, master, port, addr, from_env=from_env)


def ifname_of(addr: str) -> str | None:
    """The interface holding IPv4 `addr`: Gloo must bind there, not where the hostname points
    (inside a Mininet host the hostname resolves to the root namespace's address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            req = struct.pack("256s", name.encode()[:15])
            try:
                res = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, req)
            except OSError:
                continue
            if socket.inet_ntoa(res[20:24]) == addr:
                return name
    return None


def init_group(ident: Identity, dilation: float = 1.0) -> None:
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        name = ifname_of(ident.addr)
        if name is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = name
    # under torchrun its agent already serves the store on MASTER_PORT; env:// reuses it
    init = "env://" if ident.from_env else f"tcp://{ident.master_addr}:{ident.master_port}"
    dist.init_process_group(
        "gloo",
        init_method=init,
        rank=ident.rank,
        world_size=ident.world,
        timeout=timedelta(seconds=GLOO_TIMEOUT_S * dilation),
    )


def transport_config(args: argparse.Namespace) -> Any:
    """The spec's transport settings as played under its dilation D: pacing / D, t_max x D,
    the transport's own time constants x D (`time_scale`)."""
    if args.transport == "tcp":
        return None
    from workloads.transport.config import TransportConfig

    d = args.dilation
    fields = {
        "base_port": args.base_port,
        "mtu": args.mtu,
        "t_max_ms": None if args.t_max_ms is None else args.t_max_ms * d,
        "t_max_p50": args.t_max_p50,
        "optireduce_mode": args.optireduce_mode,
        "rescale": args.rescale,
        "seed": args.seed,
        "time_scale": d,
        "fastpath": args.fastpath,
    }
    # without a pace, the transport's own default rate (dilated too)
    pace = args.pace_mbps if args.pace_mbps is not None else TransportConfig.rate_mbps
    if args.pace_mbps is not None or d != 1:
        fields["rate_mbps"] = pace / d
    if args.drop:
        fields["drop"] = args.drop
    return TransportConfig(**fields)


def stretch_compute(step_ms: float, comm_ms: float, dilation: float) -> float:
    """Under time dilation D the network is D x slower, so the compute must be too, or the
    compute/communication ratio is not the emulated one: sleep (D - 1) x the step's compute
    (its time minus its communication). Returns the ms slept."""
    extra_ms = (dilation - 1) * max(0.0, step_ms - comm_ms)
    if extra_ms > 0:
        time.sleep(extra_ms / 1e3)
    return extra_ms


def lr_milestones(total_steps: int, every: int) -> tuple[int, ...]:
    """Decay steps at LR_DECAY_AT of the run, on checkpoint boundaries (so ε can follow)."""
    out = []
    for frac in LR_DECAY_AT:
        m = max(every, int(frac * total_steps) // every * every)
        if m < total_steps and m not in out:
            out.append(m)
    return tuple(out)


def lr_at(base: float, step: int, milestones: tuple[int, ...]) -> float:
    return base * LR_DECAY ** sum(step >= m for m in milestones)


def busy_ms(rows: list[dict[str, Any]], lo: float, hi: float) -> float:
    """Length of the union of the `total` rounds' intervals inside [lo, hi], in ms."""
    spans = sorted(
        (max(lo, r["t_start_s"]), min(hi, r["t_end_s"])) for r in rows if r["stage"] == "total"
    )
    total, end = 0.0, -math.inf
    for a, b in spans:
        if b <= a:
            continue
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total * 1e3


def step_loss(rows: list[dict[str, Any]]) -> float:
    """Delivered loss over the step's rounds, weighted by their expected packets."""
    tot = [r for r in rows if r["stage"] == "total"]
    expected = sum(r["pkts_expected"] for r in tot)
    if not expected:
        return 0.0
    return sum(r["delivered_loss"] * r["pkts_expected"] for r in tot) / expected


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: datasets.Dataset) -> tuple[float, float]:
    model.eval()
    logits = torch.cat([model(x) for x in data.x_test.split(EVAL_BATCH)])
    model.train()
    loss = F.cross_entropy(logits, data.y_test).item()
    acc = (logits.argmax(1) == data.y_test).float().mean().item()
    return acc, loss


@torch.no_grad()
def replica_drift(model: torch.nn.Module) -> float:
    """max over ranks of ‖θ_r − θ_0‖/‖θ_0‖ (every rank calls; exactly 0 when replicas agree)."""
    mine = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    ref = mine.clone()
    dist.broadcast(ref, src=0)
    drift = torch.tensor([(torch.linalg.vector_norm(mine - ref) / torch.linalg.vector_norm(ref))])
    dist.all_reduce(drift, op=dist.ReduceOp.MAX)
    return float(drift.item())


@torch.no_grad()
def resync(model: torch.nn.Module) -> None:
    flat = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    dist.broadcast(flat, src=0)
    torch.nn.utils.vector_to_parameters(flat, model.parameters())


def _phase_config(args: argparse.Namespace) -> PhaseConfig:
    """The controller's settings: the spec's where given (not None), its own defaults elsewhere."""
    tuned = ("eps_critical", "eps_stable", "checkpoint_every", "warmup_steps")
    given = {k: getattr(args, k) for k in tuned if getattr(args, k) is not None}
    return PhaseConfig(**given, enabled=args.phase == "on", pinned_epsilon=args.epsilon)


def _boot_id() -> str | None:
    """This boot's id: ranks sharing it share CLOCK_MONOTONIC (Linux; None elsewhere)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _base_meta(args: argparse.Namespace, ident: Identity, state: Any) -> dict[str, Any]:
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
        "workload": args.workload,
        "spec": {k: getattr(args, k) for k in WorkerSpec.model_fields},
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "versions": versions(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "transport_params": state.meta(),
    }


def _last_round_over() -> None:
    """Wait until every rank has finished its last round before any transport stops: a rank
    still repairing its last round needs its peers to answer NACKs (closing first left it
    waiting for repairs that never came, until its cap)."""
    dist.barrier()


def run_train(args: argparse.Namespace, ident: Identity, rec: RankRecorder) -> None:
    data = datasets.for_model(args.model, args.seed)
    model = build_model(args.model, args.seed)
    n_params = param_count(model)
    spe = datasets.steps_per_epoch(len(data.y_train), ident.world, args.batch_size)
    if spe == 0:
        raise SystemExit(f"batch size {args.batch_size} x world {ident.world} exceeds the data")
    total = args.epochs * spe if args.steps is None else min(args.steps, args.epochs * spe)
    pcfg = _phase_config(args)
    milestones = lr_milestones(total, pcfg.checkpoint_every)
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    cap_elems = min(n_params, int(args.bucket_cap_mb * 2**20 / 4))
    state = register_transport(
        ddp,
        args.transport,
        transport_config(args),
        addr=ident.addr,
        calibrate_elems=cap_elems,
    )
    phase = PhaseController(pcfg, milestones, ident.rank)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=MOMENTUM)
    meta = _base_meta(args, ident, state) | {
        "model": args.model,
        "params": n_params,
        "dataset": data.name,
        "train_size": len(data.y_train),
        "test_size": len(data.y_test),
        "steps_per_epoch": spe,
        "steps_total": total,
        "lr_milestones": list(milestones),
        "phase_config": asdict(pcfg),
    }
    rec.write_meta(meta)
    lead = ident.rank == 0
    step = 0
    try:
        for epoch in range(args.epochs):
            batches = datasets.shard_batches(
                len(data.y_train), ident.rank, ident.world, args.batch_size, epoch, args.seed
            )
            for idx in batches:
                if step >= total:
                    break
                decision = phase.update(step)
                state.set_context(step, decision.phase, decision.epsilon, decision.eps_id)
                lr = lr_at(args.lr, step, milestones)
                for g in opt.param_groups:
                    g["lr"] = lr
                x, y = data.x_train[idx], data.y_train[idx]
                t0 = time.monotonic()
                if lead and step == 0:
                    emit("t0", t_s=t0)
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(ddp(x), y)
                loss.backward()
                opt.step()
                t1 = time.monotonic()
                rows = state.drain_rows()
                comm = busy_ms(rows, t0, t1)
                step_ms = (t1 - t0) * 1e3
                step_ms += stretch_compute(step_ms, comm, args.dilation)
                phase.after_step(ddp.parameters())
                rec.write_rounds(rows)
                rec.write_step(
                    {
                        "rank": ident.rank,
                        "step": step,
                        "epoch": epoch,
                        "t_start_s": t0,
                        "compute_ms": max(0.0, step_ms - comm),
                        "comm_ms": comm,
                        "step_ms": step_ms,
                        "train_loss": float(loss.item()),
                        "lr": lr,
                    }
                )
                rec.flush()
                if lead:
                    lat = [r["latency_ms"] for r in rows if r["stage"] == "total"]
                    emit(
                        "step",
                        step=step,
                        epoch=epoch,
                        steps_total=total,
                        round_ms=max(lat, default=0.0),
                        delivered_loss=step_loss(rows),
                    )
                step += 1
                if args.resync_every and step % args.resync_every == 0:
                    resync(ddp.module)
                if step == total or step % spe == 0:
                    _evaluate(ddp.module, data, step, epoch, lead, rec)
            if step >= total:
                break
        _last_round_over()
    finally:
        state.close()
        meta["phase_checkpoints"] = [
            asdict(c.decision) | {"acc_norm": c.acc_norm, "control_ms": c.control_ms}
            for c in phase.history
        ]
        ctl = [c.control_ms for c in phase.history]
        meta["control_ms"] = _summary(ctl)
        meta["steps_done"] = step
        meta["transport_params"] = state.meta()  # now with the run's suspect-datagram totals
        rec.write_meta(meta)


def _summary(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"n": 0}
    a = np.asarray(xs)
    return {"n": len(xs), "p50": float(np.median(a)), "max": float(a.max()), "sum": float(a.sum())}


def _evaluate(
    model: torch.nn.Module,
    data: datasets.Dataset,
    step: int,
    epoch: int,
    lead: bool,
    rec: RankRecorder,
) -> None:
    drift = replica_drift(model)
    if not lead:
        return
    acc, loss = evaluate(model, data)
    rec.write_eval(
        {
            "step": step,
            "epoch": epoch,
            "t_s": time.monotonic(),
            "test_acc": acc,
            "test_loss": loss,
            "replica_drift": drift,
        }
    )
    rec.flush()
    emit("eval", step=step, test_acc=acc)


def run_allreduce(args: argparse.Namespace, ident: Identity, rec: RankRecorder) -> None:
    """Rounds of one bucket at a fixed compute gap, no model: isolates communication."""
    n = int(args.size_mib * 2**20 / 4)
    eps = _phase_config(args).off_epsilon
    state = make_state(args.transport, transport_config(args), addr=ident.addr, calibrate_elems=n)
    hook = hook_for(args.transport)
    src = torch.from_numpy(
        np.random.default_rng((args.seed, ident.rank)).standard_normal(n).astype(np.float32)
    )
    buf = torch.empty_like(src)
    meta = _base_meta(args, ident, state) | {"elements": n}
    rec.write_meta(meta)
    lead = ident.rank == 0
    try:
        interval_ms = args.interval_ms * args.dilation
        for r in range(args.rounds):
            time.sleep(interval_ms / 1e3)
            buf.copy_(src)
            state.set_context(r, "stable", eps, 0)
            t0 = time.monotonic()
            if lead and r == 0:
                emit("t0", t_s=t0)
            hook(state, TensorBucket(buf)).wait()
            t1 = time.monotonic()
            rows = state.drain_rows()
            rec.write_rounds(rows)
            comm = busy_ms(rows, t0, t1)
            rec.write_step(
                {
                    "rank": ident.rank,
                    "step": r,
                    "epoch": 0,
                    "t_start_s": t0,
                    "compute_ms": interval_ms,
                    "comm_ms": comm,
                    "step_ms": (t1 - t0) * 1e3 + interval_ms,
                    "train_loss": float("nan"),
                    "lr": 0.0,
                }
            )
            rec.flush()
            if lead:
                lat = [x["latency_ms"] for x in rows if x["stage"] == "total"]
                emit(
                    "step",
                    step=r,
                    epoch=0,
                    steps_total=args.rounds,
                    round_ms=max(lat, default=0.0),
                    delivered_loss=step_loss(rows),
                )
        _last_round_over()
    finally:
        state.close()
        meta["transport_params"] = state.meta()  # now with the run's suspect-datagram totals
        rec.write_meta(meta)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    ident = resolve_identity(args)
    init_group(ident, args.dilation)
    rec = RankRecorder(args.out, ident.rank, args.run_id)
    ok = False
    try:
        (run_train if args.workload == "train" else run_allreduce)(args, ident, rec)
        ok = True
    finally:
        rec.close()
        if ok:
            # a barrier first: without it one rank can abort in Gloo's teardown race
            dist.barrier()
        dist.destroy_process_group()
    if ident.rank == 0:
        emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
