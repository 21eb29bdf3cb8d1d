"""One DDP rank: `python -m workloads.train` (its contract: docs/design.md, Workers).

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

Here: the entry point and the `train` workload. The command line is args.py, joining the job
rendezvous.py, what a rank records about itself rank.py, the per-step arithmetic steps.py, the
between-step model work replicas.py, and the `allreduce` workload allreduce.py.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import asdict

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from workloads import datasets
from workloads.allreduce import run_allreduce
from workloads.args import WorkerArgs, parse_args
from workloads.models import build_model, param_count
from workloads.rank import base_meta, phase_config, transport_config
from workloads.recipe import make_optimizer, recipe_for, schedule_for
from workloads.recorder import RankRecorder, emit
from workloads.rendezvous import Identity, init_group, last_round_over, resolve_identity
from workloads.replicas import evaluate, replica_drift, resync
from workloads.round_signal import observe_rounds
from workloads.steps import busy_ms, round_ms, step_loss, stretch_compute, summary
from workloads.transport.hooks import register_transport
from workloads.transport.phase import Decision, PhaseController, rules_for


def run_train(args: WorkerArgs, ident: Identity, rec: RankRecorder) -> None:
    spec = args.spec
    data = datasets.for_model(spec.model, spec.seed)
    model = build_model(spec.model, spec.seed)
    n_params = param_count(model)
    spe = datasets.steps_per_epoch(len(data.y_train), ident.world, spec.batch_size)
    if spe == 0:
        raise SystemExit(f"batch size {spec.batch_size} x world {ident.world} exceeds the data")
    total = spec.epochs * spe if spec.steps is None else min(spec.steps, spec.epochs * spe)
    pcfg = phase_config(spec)
    recipe = recipe_for(spec.model)
    sched = schedule_for(recipe, spec.lr, total, spe, pcfg.checkpoint_every)
    ddp = DistributedDataParallel(model, bucket_cap_mb=spec.bucket_cap_mb)
    cap_elems = min(n_params, int(spec.bucket_cap_mb * 2**20 / 4))
    state = register_transport(
        ddp,
        spec.transport,
        transport_config(spec),
        addr=ident.addr,
        calibrate_elems=cap_elems,
        collective=spec.collective,
    )
    signal = observe_rounds(state, ident.rank)
    # a cosine schedule has no decay steps: the controller's critical phases are then its
    # warm-up and Accordion's rule
    phase = PhaseController(rules_for(pcfg, sched.decay_steps, spe), ident.rank)
    opt = make_optimizer(recipe, ddp.parameters(), sched.at(0))
    meta = base_meta(args, ident, state) | {
        "model": spec.model,
        "params": n_params,
        "dataset": data.name,
        "train_size": len(data.y_train),
        "test_size": len(data.y_test),
        "steps_per_epoch": spe,
        "steps_total": total,
        "lr_milestones": list(sched.decay_steps),
        "recipe": recipe.record() | {"lr_warmup_steps": sched.warmup_steps},
        "phase_config": pcfg.record(),
    }
    rec.write_meta(meta)
    lead = ident.rank == 0
    step = 0
    try:
        for epoch in range(spec.epochs):
            batches = datasets.shard_batches(
                len(data.y_train), ident.rank, ident.world, spec.batch_size, epoch, spec.seed
            )
            for idx in batches:
                if step >= total:
                    break
                decision = phase.update(step)
                state.set_context(step, decision.phase, decision.epsilon, decision.eps_id)
                if lead and phase.switched:
                    emit("eps_switch", **_switch(decision, spe))
                lr = sched.at(step)
                for g in opt.param_groups:
                    g["lr"] = lr
                x, y = data.x_train[idx], data.y_train[idx]
                waited = signal.waited_s if signal is not None else 0.0
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
                if signal is not None:  # the hook's wait for a hit round's begin barrier
                    comm += (signal.waited_s - waited) * 1e3
                step_ms = (t1 - t0) * 1e3
                step_ms += stretch_compute(step_ms, comm, spec.dilation)
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
                    emit(
                        "step",
                        step=step,
                        epoch=epoch,
                        steps_total=total,
                        round_ms=round_ms(rows),
                        delivered_loss=step_loss(rows),
                    )
                step += 1
                if spec.resync_every and step % spec.resync_every == 0:
                    resync(ddp.module)
                if step == total or step % spe == 0:
                    _evaluate(ddp.module, data, step, epoch, lead, rec)
            if step >= total:
                break
        last_round_over()
    finally:
        state.close()
        if signal is not None:
            signal.close()
        meta["phase_checkpoints"] = [
            asdict(c.decision) | {"acc_norm": c.acc_norm, "control_ms": c.control_ms}
            for c in phase.history
        ]
        # every ε switch with its step and epoch, for run.json's transport_params.phase
        meta["phase_config"] = pcfg.record() | {
            "switches": [_switch(c.decision, spe) for c in phase.history if c.switched]
        }
        ctl = [c.control_ms for c in phase.history]
        meta["control_ms"] = summary(ctl)
        meta["steps_done"] = step
        meta["transport_params"] = state.meta()  # now with the run's suspect-datagram totals
        rec.write_meta(meta)


def _switch(d: Decision, steps_per_epoch: int) -> dict[str, object]:
    """One ε switch as the event stream and run.json show it."""
    return {
        "step": d.effective_step,
        "epoch": d.effective_step // steps_per_epoch,
        "epsilon": d.epsilon,
        "train_phase": d.phase,
        "reason": d.reason,
    }


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, description=__doc__.split("\n")[0])
    torch.set_num_threads(args.spec.threads)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    ident = resolve_identity(args)
    init_group(ident, args.spec.dilation)
    rec = RankRecorder(args.out, ident.rank, args.run_id)
    ok = False
    try:
        (run_train if args.spec.workload == "train" else run_allreduce)(args, ident, rec)
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
