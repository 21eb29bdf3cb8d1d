"""What a worker does with the model between steps, outside the timed rounds: evaluate it,
measure how far the replicas drifted apart, and re-broadcast rank 0's parameters."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from workloads import datasets

EVAL_BATCH = 256


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
