"""The models a worker trains: sized so gradient traffic, not compute, dominates a step.

`cnn` (digits, 8x8x1): ~1.0 M parameters = ~4 MB of float32 gradients per step, so at
100 Mbit/s a step is communication-bound (DESIGN §5). `resnet` (32x32x3): a ResNet-style CNN
of ~1.2 M parameters whose convolutions make it heavier in compute too. `mnist1d` (MNIST-1D,
40 x 1): a 1-D CNN of ~138 k parameters (0.53 MiB of gradients); at its recipe's 4 x 32
samples per step (workloads/recipe.py) a rank computes for ~20 ms (offline, one thread) while
the all-reduce takes ~70 ms at 100 Mbit/s, so communication is most of a step, not all of it.
GroupNorm instead of BatchNorm: no running buffers, so DDP has nothing to broadcast over TCP
each forward, and the UDP transports carry all of a step's traffic.
"""

from __future__ import annotations

import torch
from torch import nn

#: Input shape (C, H, W) and class count per model name.
INPUT_SHAPES: dict[str, tuple[int, ...]] = {
    "cnn": (1, 8, 8),
    "mnist1d": (1, 40),
    "resnet": (3, 32, 32),
}
NUM_CLASSES = 10


class DigitsCNN(nn.Module):
    """Two small convolutions then a wide MLP: most parameters sit in the dense layers."""

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 768),
            nn.ReLU(),
            nn.Linear(768, 256),
            nn.ReLU(),
            nn.Linear(256, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class Mnist1dCNN(nn.Module):
    """Four same-length 1-D convolutions (64 channels), each followed by GroupNorm, two
    poolings, a small MLP head. GroupNorm normalises each sample on its own, so one process
    with the global batch computes exactly what DDP computes across its ranks (BatchNorm's
    batch statistics would differ); without a normalisation this net's SGD runs fell to
    chance early in training (issue 19)."""

    def __init__(self, num_classes: int = NUM_CLASSES, width: int = 64, groups: int = 8) -> None:
        super().__init__()
        c = width

        def conv(c_in: int, k: int) -> list[nn.Module]:
            return [nn.Conv1d(c_in, c, k, padding=k // 2), nn.GroupNorm(groups, c), nn.ReLU()]

        self.features = nn.Sequential(
            *conv(1, 5),
            *conv(c, 5),
            nn.MaxPool1d(2),
            *conv(c, 5),
            nn.MaxPool1d(2),
            *conv(c, 3),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(c * 10, 128), nn.ReLU(), nn.Linear(128, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    """ResNet basic block (two 3x3 convolutions) with a projection shortcut when shapes change."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
            nn.GroupNorm(8, c_out),
            nn.ReLU(),
            nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
            nn.GroupNorm(8, c_out),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.GroupNorm(8, c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNetCNN(nn.Module):
    """A four-stage ResNet (one block per stage, widths 32-64-128-256) for 32x32 images."""

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.GroupNorm(8, 32), nn.ReLU()
        )
        self.stages = nn.Sequential(
            BasicBlock(32, 32, 1),
            BasicBlock(32, 64, 2),
            BasicBlock(64, 128, 2),
            BasicBlock(128, 256, 2),
        )
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)))


_MODELS = {"cnn": DigitsCNN, "mnist1d": Mnist1dCNN, "resnet": ResNetCNN}


def build_model(name: str, seed: int) -> nn.Module:
    """The named model with seeded initial weights (every rank builds the same one)."""
    if name not in _MODELS:
        raise ValueError(f"unknown model {name!r}; known: {sorted(_MODELS)}")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return _MODELS[name]()


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
