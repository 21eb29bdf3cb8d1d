"""Qualify a model's training recipe offline: one process, no network, CPU, one torch thread.

    python -m benchmarks.recipe [--model mnist1d] [--seeds 5] [--world 4]

Trains what the DDP worker trains (workloads/offline.py: the worker's model, data, optimizer
and schedule, on the union of `--world` ranks' batches) once per seed, and checks the
acceptance rule, written before any recipe was tried (issue 19). Needs no root: it runs
beside the emulated benchmarks, not under their lock.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from workloads import datasets
from workloads.models import INPUT_SHAPES, build_model, param_count
from workloads.offline import OfflineRun, train_offline
from workloads.recipe import recipe_for


@dataclass(frozen=True)
class Rule:
    """Over the seeds: every final test accuracy >= `min_final`; no fall of more than
    `max_drop` below the best-so-far test accuracy at any epoch after the warm-up; final
    accuracies within `max_spread` of each other (max - min)."""

    min_final: float = 0.85
    max_drop: float = 0.05
    max_spread: float = 0.015

    def header(self, seeds: int) -> str:
        return (
            f"acceptance rule (over {seeds} seeds; test accuracy after every epoch):\n"
            f"  final test accuracy >= {self.min_final:.2f} on every seed\n"
            f"  no drop > {self.max_drop * 100:g} points after the warm-up "
            "(drop = best so far - current)\n"
            f"  spread of final accuracy (max - min) <= {self.max_spread * 100:g} points"
        )

    def verdict(self, runs: list[OfflineRun]) -> list[tuple[str, bool]]:
        finals = [r.final for r in runs]
        drops = [r.max_drop for r in runs]
        spread = max(finals) - min(finals)
        lo = min(finals)
        eps = 1e-9  # accuracies are k/N: a spread of exactly the limit passes
        return [
            (f"min final acc {lo:.3f} >= {self.min_final:.2f}", lo >= self.min_final - eps),
            (
                f"max drop after warm-up {max(drops) * 100:.1f} pt <= {self.max_drop * 100:g} pt",
                max(drops) <= self.max_drop + eps,
            ),
            (
                f"spread {spread * 100:.1f} pt <= {self.max_spread * 100:g} pt",
                spread <= self.max_spread + eps,
            ),
        ]


def train_flops(model: torch.nn.Module, shape: tuple[int, ...], batch: int) -> float:
    """FLOPs of one training step on `batch` samples, roughly: 2 per multiply-add of the
    convolutions and linear layers, forward plus a backward of twice the forward."""
    macs = 0

    def count(mod: torch.nn.Module, _inp: object, out: torch.Tensor) -> None:
        nonlocal macs
        w = mod.weight
        macs += out.numel() * (
            w[0].numel() if isinstance(mod, torch.nn.Conv1d | torch.nn.Conv2d) else w.shape[1]
        )

    kinds = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Linear)
    hooks = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, kinds)]
    with torch.no_grad():
        model(torch.zeros(1, *shape))
    for h in hooks:
        h.remove()
    return 3 * 2 * macs * batch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="mnist1d", help="default mnist1d")
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    ap.add_argument("--world", type=int, default=4, help="ranks the batch stands for (default 4)")
    ap.add_argument("--epochs", type=int, help="default: the recipe's")
    ap.add_argument("--batch-size", type=int, help="per rank; default: the recipe's")
    ap.add_argument("--lr", type=float, help="default: the recipe's")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # leave the shared machine's other core free

    rule = Rule()
    print(rule.header(args.seeds))
    r = recipe_for(args.model)
    epochs, batch, lr = args.epochs or r.epochs, args.batch_size or r.batch_size, args.lr or r.lr
    model = build_model(args.model, 0)
    n_train = len(datasets.for_model(args.model, 0).y_train)
    spe = datasets.steps_per_epoch(n_train, args.world, batch)
    flops = train_flops(model, INPUT_SHAPES[args.model], batch)
    print(
        f"\nrecipe {args.model}: {r.optimizer} lr {lr:g} (wd {r.weight_decay:g}), {r.schedule} "
        f"schedule, warm-up {r.warmup_epochs:g} epochs, {epochs} epochs x {spe} steps, "
        f"batch {args.world} x {batch}"
    )
    print(
        f"model: {param_count(model):,} parameters "
        f"({param_count(model) * 4 / 2**20:.2f} MiB of float32 gradients per step), "
        f"~{flops / 1e6:.0f} MFLOP per rank per step\n"
    )
    cols = ("seed", 4), ("final acc", 9), ("max drop", 8), ("time s", 6), ("s/epoch", 7)
    print("  ".join(f"{name:>{w}}" for name, w in cols) + "  per-epoch acc")
    runs = []
    for seed in range(args.seeds):
        run = train_offline(args.model, seed, args.world, epochs, batch, lr)
        runs.append(run)
        curve = " ".join(f"{a:.2f}" for a in run.accs)
        print(
            f"{seed:>4}  {run.final:>9.3f}  {run.max_drop * 100:>6.1f}pt  {run.seconds:>6.1f}  "
            f"{run.seconds / epochs:>7.2f}  {curve}",
            flush=True,
        )  # fmt: skip
    print("\nverdict:")
    results = rule.verdict(runs)
    for text, ok in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")
    met = all(ok for _, ok in results)
    print(f"rule {'met' if met else 'NOT met'} on {args.seeds} seeds")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
