"""Offline data sets: scikit-learn's bundled digits, MNIST-1D, and seeded CIFAR-shaped images.

Both are small enough to hold in memory on every rank; each rank reads its own shard of a
per-epoch permutation that every rank derives from the same seed, so no data moves over the
network and every rank runs the same number of steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Dataset:
    """Train and test tensors: inputs (N, C, ...) float32 (images N, C, H, W; sequences N, C, L),
    labels (N,) int64."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def num_classes(self) -> int:
        return int(self.y_train.max().item()) + 1


def _split(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return perm[n_test:], perm[:n_test]


def digits(seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """The 1797 8x8 digits bundled with scikit-learn, standardised on the train split."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = bunch.images.astype(np.float32)[:, None, :, :] / 16.0
    y = bunch.target.astype(np.int64)
    tr, te = _split(len(y), test_fraction, seed)
    mean, std = x[tr].mean(), x[tr].std()
    x = (x - mean) / std
    return Dataset(
        "digits",
        torch.from_numpy(x[tr]),
        torch.from_numpy(y[tr]),
        torch.from_numpy(x[te]),
        torch.from_numpy(y[te]),
    )


#: MNIST-1D as published (Greydanus & Kobak, ICML 2024): 5000 sequences of length 40, the
#: package's own seed, so accuracies compare with the paper's (CNN ~94%, MLP ~68%).
MNIST1D_SAMPLES = 5000


def mnist1d(seed: int = 0) -> Dataset:
    """MNIST-1D, generated offline by the `mnist1d` package (its canonical 4000/1000 split),
    standardised on the train split. Harder than digits for its size: a small CNN needs
    about 150 steps of 128 samples to pass 90%, so lost gradients can show in its accuracy.
    `seed` is unused: the data set is the published one; the run's seed shuffles it."""
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = MNIST1D_SAMPLES
    state = np.random.get_state()
    try:
        d = make_dataset(args)  # seeds numpy's global generator; put it back after
    finally:
        np.random.set_state(state)
    x_tr = d["x"].astype(np.float32)[:, None, :]
    x_te = d["x_test"].astype(np.float32)[:, None, :]
    mean, std = x_tr.mean(), x_tr.std()
    return Dataset(
        "mnist1d",
        torch.from_numpy((x_tr - mean) / std),
        torch.from_numpy(d["y"].astype(np.int64)),
        torch.from_numpy((x_te - mean) / std),
        torch.from_numpy(d["y_test"].astype(np.int64)),
    )


def synthetic_cifar(
    seed: int = 0, n_train: int = 4000, n_test: int = 1000, num_classes: int = 10
) -> Dataset:
    """32x32x3 images: a smooth per-class prototype, randomly shifted, plus pixel noise.

    The shift (up to 4 px) makes the classes translation-varied, so the task needs the
    convolutions rather than a template match; noise keeps it from being solved in one step.
    """
    rng = np.random.default_rng(seed)
    coarse = rng.standard_normal((num_classes, 3, 4, 4)).astype(np.float32)
    protos = coarse.repeat(8, axis=2).repeat(8, axis=3)
    n = n_train + n_test
    y = rng.integers(0, num_classes, size=n)
    x = protos[y]
    shifts = rng.integers(-4, 5, size=(n, 2))
    for i, (dy, dx) in enumerate(shifts):
        x[i] = np.roll(x[i], (int(dy), int(dx)), axis=(1, 2))
    x = x + rng.normal(0.0, 1.0, size=x.shape).astype(np.float32)
    return Dataset(
        "synthetic-cifar",
        torch.from_numpy(np.ascontiguousarray(x[:n_train])),
        torch.from_numpy(y[:n_train].astype(np.int64)),
        torch.from_numpy(np.ascontiguousarray(x[n_train:])),
        torch.from_numpy(y[n_train:].astype(np.int64)),
    )


def for_model(model: str, seed: int) -> Dataset:
    """The data set a model trains on (`cnn` -> digits, `mnist1d` -> MNIST-1D, `resnet` ->
    synthetic CIFAR)."""
    if model == "cnn":
        return digits(seed)
    if model == "mnist1d":
        return mnist1d(seed)
    if model == "resnet":
        return synthetic_cifar(seed)
    raise ValueError(f"no data set for model {model!r}")


#: Training examples per model's data set, known without building it (the testbed plans a
#: training run's rounds from it; a unit test checks it against the data sets).
TRAIN_SIZES = {"cnn": 1438, "mnist1d": 4000, "resnet": 4000}


def steps_per_epoch(n: int, world: int, batch_size: int) -> int:
    """Full batches per rank per epoch (the remainder is dropped so ranks stay in step)."""
    return (n // world) // batch_size


def shard_batches(
    n: int, rank: int, world: int, batch_size: int, epoch: int, seed: int
) -> Iterator[torch.Tensor]:
    """Index batches of this rank's shard of epoch `epoch` (the same permutation on every rank)."""
    perm = np.random.default_rng((seed, epoch)).permutation(n)
    mine = perm[rank::world][: steps_per_epoch(n, world, batch_size) * batch_size]
    for i in range(0, len(mine), batch_size):
        yield torch.from_numpy(mine[i : i + batch_size])
