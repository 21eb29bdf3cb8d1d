"""The `allreduce` workload: rounds of one bucket at a fixed compute gap, no model, so
communication alone is measured, through exactly the hooks training runs."""

from __future__ import annotations

import time

import numpy as np
import torch

from workloads.args import WorkerArgs
from workloads.rank import base_meta, phase_config, transport_config
from workloads.recorder import RankRecorder, emit
from workloads.rendezvous import Identity, last_round_over
from workloads.round_signal import observe_rounds
from workloads.steps import busy_ms, round_ms, step_loss
from workloads.transport.dilation import TimeDilation
from workloads.transport.hooks import TensorBucket, hook_for, make_state


def run_allreduce(args: WorkerArgs, ident: Identity, rec: RankRecorder) -> None:
    """Rounds of one bucket at a fixed compute gap, no model: isolates communication."""
    spec = args.spec
    n = int(spec.size_mib * 2**20 / 4)
    eps = phase_config(spec).off_epsilon
    state = make_state(
        spec.transport,
        transport_config(spec),
        addr=ident.addr,
        calibrate_elems=n,
        collective=spec.collective,
    )
    hook = hook_for(spec.transport)
    signal = observe_rounds(state, ident.rank)
    src = torch.from_numpy(
        np.random.default_rng((spec.seed, ident.rank)).standard_normal(n).astype(np.float32)
    )
    buf = torch.empty_like(src)
    meta = base_meta(args, ident, state) | {"elements": n}
    rec.write_meta(meta)
    lead = ident.rank == 0
    try:
        interval_ms = TimeDilation(spec.dilation).played(spec.interval_ms)
        for r in range(spec.rounds):
            time.sleep(interval_ms / 1e3)
            buf.copy_(src)
            state.set_context(r, "stable", eps, 0)
            if signal is not None:  # the round-aligned handshake, outside the timed step
                signal.begin(r)
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
                emit(
                    "step",
                    step=r,
                    epoch=0,
                    steps_total=spec.rounds,
                    round_ms=round_ms(rows),
                    delivered_loss=step_loss(rows),
                )
        last_round_over()
    finally:
        state.close()
        if signal is not None:
            signal.close()
        meta["transport_params"] = state.meta()  # now with the run's suspect-datagram totals
        rec.write_meta(meta)
