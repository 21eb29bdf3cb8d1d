"""How each model is trained: optimizer, learning rate and its schedule, epochs, batch.

One table (`RECIPES`) keyed by model, so a model's defaults are written once and the worker
(workloads/train.py) and the offline qualification (workloads/offline.py, run by
benchmarks/recipe.py)
build the same optimizer and follow the same schedule. The spec's `lr`, `epochs` and
`batch_size` override a recipe's; its optimizer and schedule are the model's.

`cnn` and `resnet` keep the digits demo's recipe (SGD with momentum, lr 0.1, decayed 10x at
half and three quarters of the run). `mnist1d` is the recipe qualified offline for issue 19
(see `benchmarks/recipe.py` for the rule it meets and the runs): AdamW with a linear warm-up
then cosine decay to zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from workloads.steps import lr_at, lr_milestones

if TYPE_CHECKING:  # the spec reads the table without importing torch
    import torch

Schedule = Literal["step", "cosine"]


@dataclass(frozen=True)
class Recipe:
    """A model's training defaults. `lr` is the peak (after warm-up); batch is per rank."""

    optimizer: Literal["sgd", "adamw"]
    lr: float
    epochs: int
    batch_size: int
    schedule: Schedule
    warmup_epochs: float = 0.0
    momentum: float = 0.9
    weight_decay: float = 0.0

    def record(self) -> dict[str, object]:
        """The recipe as meta.json carries it."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_DEMO = Recipe("sgd", 0.1, 5, 16, "step")
RECIPES: dict[str, Recipe] = {
    "cnn": _DEMO,
    "resnet": _DEMO,
    "mnist1d": Recipe("adamw", 2e-3, 12, 32, "cosine", warmup_epochs=2.0, weight_decay=0.05),
}


def recipe_for(model: str) -> Recipe:
    if model not in RECIPES:
        raise ValueError(f"no recipe for model {model!r}; known: {sorted(RECIPES)}")
    return RECIPES[model]


def make_optimizer(
    recipe: Recipe, params: Iterable[torch.nn.Parameter], lr: float
) -> torch.optim.Optimizer:
    """The recipe's optimizer at learning rate `lr` (the schedule sets it every step)."""
    import torch

    if recipe.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay
        )
    return torch.optim.AdamW(params, lr=lr, weight_decay=recipe.weight_decay)


@dataclass(frozen=True)
class LrSchedule:
    """The learning rate at each step. `step`: `base`, decayed 10x at `decay_steps`. `cosine`:
    a linear warm-up from base/warmup to base over `warmup_steps`, then a half cosine from
    base to 0 at `total` (no discrete decays, so `decay_steps` is empty)."""

    kind: Schedule
    base: float
    total: int
    warmup_steps: int = 0
    decay_steps: tuple[int, ...] = field(default=())

    def at(self, step: int) -> float:
        if self.kind == "step":
            return lr_at(self.base, step, self.decay_steps)
        if step < self.warmup_steps:
            return self.base * (step + 1) / self.warmup_steps
        span = max(1, self.total - self.warmup_steps)
        done = min(1.0, (step - self.warmup_steps) / span)
        return self.base * 0.5 * (1 + math.cos(math.pi * done))


def schedule_for(
    recipe: Recipe, lr: float, total: int, steps_per_epoch: int, checkpoint_every: int
) -> LrSchedule:
    """The recipe's schedule for a run of `total` steps. A step schedule's decays fall on the
    phase controller's checkpoints (`lr_milestones`), so its ε can follow them."""
    if recipe.schedule == "step":
        return LrSchedule("step", lr, total, decay_steps=lr_milestones(total, checkpoint_every))
    warmup = min(total, round(recipe.warmup_epochs * steps_per_epoch))
    return LrSchedule("cosine", lr, total, warmup_steps=warmup)
