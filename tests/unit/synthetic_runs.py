"""A factory of synthetic run folders with known answers, written through analysis.schema.

Each synthetic run has `n_rounds` rounds, one training step per round, back to back from t0:
step i computes for COMPUTE_MS, then all-reduces for the round's latency. Rounds listed in
`burst_rounds` (index ranges) fall inside an applied burst window and take `burst_ms`; the
rest take `base_ms`. Rank 0 is the slowest rank (the others take half), so a round's latency
(max over ranks) is exactly base_ms or burst_ms. Round 0 is a warm-up round with a huge
latency that every table must exclude. Reusable by other tests (`write_run`).
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np

from analysis.schema import RunInfo, write_run_info, write_table
from testbed.bursts import presets
from workloads.transport.completion import transport_traits

WARMUP_MS = 5000.0
COMPUTE_MS = 10.0


def _rows_for_round(run_id, transport, i, t, lat_ms, loss, eps, ranks, cap_hit, nacks):
    rows = []
    for rank in range(ranks):
        lat = lat_ms if rank == 0 else lat_ms / 2
        for stage in ("scatter", "gather", "total"):
            stage_lat = lat if stage == "total" else lat / 2
            rows.append(
                dict(
                    run_id=run_id,
                    rank=rank,
                    round=i,
                    iter=i,
                    bucket=0,
                    transport=transport,
                    stage=stage,
                    train_phase="critical" if i < 5 else "stable",
                    t_start_s=t,
                    t_end_s=t + stage_lat / 1000.0,
                    latency_ms=stage_lat,
                    bytes=4_000_000,
                    pkts_expected=1000,
                    pkts_received=int(1000 * (1 - loss)),
                    delivered_loss=loss,
                    epsilon=eps,
                    nacks=nacks,
                    retx_pkts=nacks,
                    cap_hit=cap_hit,
                    bad_dgrams=0,
                    cpu_wait_ms=0.0,
                    loop_late_ms=0.1,
                    is_warmup=i == 0,
                )
            )
    return rows


def write_run(
    root: Path,
    run_id: str,
    *,
    transport: str = "dblp",
    preset: str = "heavy",
    seed: int = 0,
    ranks: int = 2,
    n_rounds: int = 60,
    base_ms: float = 20.0,
    burst_ms: float = 100.0,
    burst_rounds: tuple[tuple[int, int], ...] = ((10, 20),),
    loss_in: float = 0.05,
    loss_out: float = 0.0,
    epsilon: float = 0.05,
    final_acc: float = 0.9,
    eval_every: int = 10,
    status: str = "ok",
    reason: str = "",
    unfaithful: bool = False,
    workload: str = "train",
    spec: dict | None = None,
    t0: float = 100.0,
    cap_hit_in_burst: bool = False,
    nacks_in_burst: int = 0,
    unapplied_event: bool = True,
    rejections: dict[str, int] | None = None,
    jitter: float = 0.0,
    oversubscribed: bool = False,
    traits: dict | None = None,
) -> Path:
    """Write one run folder under root; returns its path. burst_rounds are [lo, hi) ranges.
    run.json carries the transport's traits from the registry (`traits` overrides them) and
    the preset's role from its TOML (a preset that is not a built-in is a burst one).
    jitter > 0 scales each round's latency by a lognormal factor (sigma = jitter), seeded by
    the run id: realistic-looking curves for figures, no longer exact answers."""
    d = Path(root) / run_id
    d.mkdir(parents=True, exist_ok=True)
    # a run cut short keeps the bursts that happened before it stopped
    burst_rounds = tuple((lo, min(hi, n_rounds)) for lo, hi in burst_rounds if lo < n_rounds)
    bursty = {i for lo, hi in burst_rounds for i in range(lo, hi)}
    noise = np.random.default_rng(zlib.crc32(run_id.encode())).lognormal(0.0, jitter, n_rounds)
    rounds, steps, evals = [], [], []
    starts = []
    step_start = t0
    for i in range(n_rounds):
        t = step_start + COMPUTE_MS / 1000.0
        starts.append(t)
        inb = i in bursty
        lat = WARMUP_MS if i == 0 else (burst_ms if inb else base_ms) * float(noise[i])
        rounds += _rows_for_round(
            run_id,
            transport,
            i,
            t,
            lat,
            loss_in if inb else loss_out,
            epsilon,
            ranks,
            cap_hit_in_burst and inb,
            nacks_in_burst if inb else 0,
        )
        for rank in range(ranks):
            steps.append(
                dict(
                    run_id=run_id,
                    rank=rank,
                    step=i,
                    epoch=0,
                    t_start_s=step_start,
                    compute_ms=COMPUTE_MS,
                    comm_ms=lat,
                    step_ms=COMPUTE_MS + lat,
                    train_loss=2.0 / (1 + i),
                    lr=0.05,
                )
            )
        if workload == "train" and ((i > 0 and i % eval_every == 0) or i == n_rounds - 1):
            frac = i / (n_rounds - 1)
            evals.append(
                dict(
                    run_id=run_id,
                    step=i,
                    epoch=0,
                    t_s=t + lat / 1000.0,
                    test_acc=final_acc * frac,
                    test_loss=1.0 - frac / 2,
                    replica_drift=0.001 * frac if transport in ("dblp", "optireduce") else 0.0,
                )
            )
        step_start = t + lat / 1000.0
    bursts = []
    for k, (lo, hi) in enumerate(burst_rounds):
        start = starts[lo] - 0.001
        end = starts[hi - 1] + 0.001
        for direction in ("a->b", "b->a"):
            bursts.append(
                dict(
                    run_id=run_id,
                    event_id=k,
                    link="a-b",
                    direction=direction,
                    kind="loss",
                    magnitude=0.05,
                    planned_start_s=start,
                    planned_end_s=end,
                    applied_start_s=start + (0.0005 if direction == "b->a" else 0.0),
                    applied_end_s=end,
                    drops=10,
                )
            )
    if unapplied_event:
        bursts.append(
            dict(
                run_id=run_id,
                event_id=len(burst_rounds),
                link="a-b",
                direction="a->b",
                kind="loss",
                magnitude=0.05,
                planned_start_s=starts[1],
                planned_end_s=starts[-1],
                applied_start_s=math.nan,
                applied_end_s=math.nan,
                drops=0,
            )
        )
    write_table(d, "rounds", rounds)
    write_table(d, "steps", steps)
    if evals:
        write_table(d, "evals", evals)
    if bursts:
        write_table(d, "bursts", bursts)
    full_spec = {"transport": transport, "burst": preset, "seed": seed, "workload": workload}
    full_spec.update(spec or {})
    write_run_info(
        d,
        RunInfo(
            run_id=run_id,
            status=status,
            reason=reason,
            workload=workload,
            transport=transport,
            transport_traits=traits
            if traits is not None
            else transport_traits(transport).as_dict(),
            preset=preset,
            preset_role=preset_role(preset),
            seed=seed,
            spec=full_spec,
            spec_hash=f"h-{transport}-{preset}",
            faithful=not unfaithful,
            oversubscribed=oversubscribed,
            warnings=["unfaithful: 12/100 rounds: the transport loop woke late"]
            if unfaithful
            else [],
            t0_s=t0,
            wall_s=step_start - t0 + 5.0,
            rejections=rejections or {},
        ),
    )
    return d


def preset_role(preset: str) -> str:
    """A built-in preset's role; any other name is a bursty one."""
    return presets.load(preset).role if preset in presets.builtin_names() else "burst"


def expected_train_s(n_rounds: int, base_ms: float, burst_ms: float, n_burst: int) -> float:
    """Training time of a synthetic run: every step's compute plus every round's latency."""
    total_ms = n_rounds * COMPUTE_MS + WARMUP_MS
    total_ms += (n_rounds - 1 - n_burst) * base_ms + n_burst * burst_ms
    return total_ms / 1000.0


#: The committed bench's shape (docs/results/bench-fattree-k4): label -> (transport, spec,
#: calm round ms, in-burst round ms, ε). Latencies roughly as measured there.
BENCH_ALLREDUCE = {
    "tcp": ("tcp", {}, 150.0, 1500.0, 0.0),
    "tcp-rto5ms": ("tcp", {"tcp_rto_min_ms": 5.0}, 160.0, 700.0, 0.0),
    "optireduce": ("optireduce", {}, 150.0, 230.0, 0.0),
    "optireduce-fixed": ("optireduce", {"optireduce_mode": "fixed"}, 150.0, 590.0, 0.0),
    "dblp": ("dblp", {}, 148.0, 200.0, 0.2),
    "reliable": ("reliable", {}, 150.0, 400.0, 0.0),
}
BENCH_TRAIN = {
    "tcp": ("tcp", {}, 600.0, 2500.0, 0.0),
    "optireduce": ("optireduce", {}, 580.0, 820.0, 0.0),
    "dblp": ("dblp", {}, 570.0, 700.0, 0.2),
    "dblp-phase-off": ("dblp", {"phase": "off"}, 590.0, 640.0, 0.2),
}


def write_bench_like(
    root: Path, repeats: int = 1, overrides: dict[str, dict] | None = None
) -> list[Path]:
    """A sweep shaped like `make bench`: allreduce (60 rounds, 6 transports x none/heavy, plus
    tcp/optireduce/dblp under sham) and train (40 steps, 4 transports x none/heavy, two
    evaluations per run); heavy = ~30 short bursts; every run unfaithful and oversubscribed.
    overrides: per run id, keyword arguments for `write_run` (e.g. status="interrupted")."""
    rng = np.random.default_rng(0)
    dirs = []
    plan = [("allreduce", 60, lab, v, p) for lab, v in BENCH_ALLREDUCE.items()
            for p in ("none", "heavy")]  # fmt: skip
    plan += [("allreduce", 60, lab, BENCH_ALLREDUCE[lab], "sham")
             for lab in ("tcp", "optireduce", "dblp")]  # fmt: skip
    plan += [("train", 40, lab, v, p) for lab, v in BENCH_TRAIN.items() for p in ("none", "heavy")]
    for rep in range(repeats):
        for workload, n, label, (transport, spec, calm, burst, eps), preset in plan:
            hits = sorted(rng.choice(range(2, n - 1), size=n // 2, replace=False))
            bursts = tuple((int(i), int(i) + 1) for i in hits) if preset != "none" else ()
            if preset == "sham":
                burst = calm  # CPU-only control: windows without network impairment
            run_id = f"{workload[:2]}-{label}-{preset}-r{rep}"
            kwargs = dict(
                transport=transport,
                preset=preset,
                seed=rep,
                workload=workload,
                n_rounds=n,
                base_ms=calm,
                burst_ms=burst,
                burst_rounds=bursts,
                epsilon=eps,
                loss_in=0.06 if transport in ("dblp", "optireduce") else 0.0,
                loss_out=0.0,
                final_acc={"tcp": 0.69, "optireduce": 0.87}.get(label, 0.69 + 0.1 * (eps > 0)),
                eval_every=n // 2,
                spec={**spec, "workload": workload, "repeat": rep},
                unfaithful=True,
                oversubscribed=True,
                jitter=0.15,
                unapplied_event=False,
            )
            kwargs.update((overrides or {}).get(run_id, {}))
            dirs.append(write_run(root, run_id, **kwargs))
    return dirs
