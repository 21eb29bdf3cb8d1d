"""The one-process twin of a DDP training run, to qualify a recipe offline (no network).

`train_offline` builds what the worker builds (model, data, the recipe's optimizer and
schedule: workloads/recipe.py) and steps on the union of the ranks' batches, which is what DDP
computes: it averages equal-sized ranks' mean gradients, i.e. the global batch's mean gradient,
and GroupNorm normalises per sample. benchmarks/recipe.py runs it over seeds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workloads import datasets
from workloads.models import build_model
from workloads.recipe import Recipe, make_optimizer, recipe_for, schedule_for
from workloads.replicas import evaluate
from workloads.transport.phase import PhaseConfig


@dataclass
class OfflineRun:
    """What `train_offline` measured: test accuracy after each epoch, and the time it took."""

    accs: list[float]
    warmup_epochs: float
    seconds: float
    steps: int

    @property
    def final(self) -> float:
        return self.accs[-1]

    @property
    def max_drop(self) -> float:
        """The largest fall of test accuracy below its best so far, after the warm-up."""
        first = math.ceil(self.warmup_epochs)
        best, drop = -math.inf, 0.0
        for i, acc in enumerate(self.accs, start=1):
            best = max(best, acc)
            if i > first:
                drop = max(drop, best - acc)
        return drop


def train_offline(
    model_name: str,
    seed: int,
    world: int = 4,
    epochs: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    recipe: Recipe | None = None,
    on_epoch: Callable[[int, float], None] | None = None,
) -> OfflineRun:
    """Train `model_name` in one process as `world` DDP ranks would (same seed, same batches
    in the same order), with test accuracy after every epoch as the worker evaluates."""
    r = recipe or recipe_for(model_name)
    epochs = epochs or r.epochs
    batch = batch_size or r.batch_size
    data = datasets.for_model(model_name, seed)
    model = build_model(model_name, seed)
    n = len(data.y_train)
    spe = datasets.steps_per_epoch(n, world, batch)
    sched = schedule_for(r, lr or r.lr, epochs * spe, spe, PhaseConfig().checkpoint_every)
    opt = make_optimizer(r, model.parameters(), sched.at(0))
    accs: list[float] = []
    t0 = time.monotonic()
    step = 0
    for epoch in range(epochs):
        shards = [datasets.shard_batches(n, k, world, batch, epoch, seed) for k in range(world)]
        for idx in map(torch.cat, zip(*shards, strict=True)):
            for g in opt.param_groups:
                g["lr"] = sched.at(step)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(data.x_train[idx]), data.y_train[idx]).backward()
            opt.step()
            step += 1
        accs.append(evaluate(model, data)[0])
        if on_epoch:
            on_epoch(epoch, accs[-1])
    return OfflineRun(accs, r.warmup_epochs, time.monotonic() - t0, step)
