"""Transpose AllReduce ranks in one process on loopback: no torch.distributed, no root.

Each rank's allreduce blocks until its peers call theirs, so `each_rank` runs one thread per
rank and re-raises the first failure in the caller (a test must never pass on a swallowed
assertion)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from workloads.transport import wire
from workloads.transport.config import TransportConfig
from workloads.transport.integrity import new_mac_key
from workloads.transport.tar import TransposeAllReduce


def loopback_job(
    world: int, policy: str, cfg: TransportConfig, token: int | None = None
) -> list[TransposeAllReduce]:
    """`world` ranks on 127.0.0.1 sharing one job token (a fresh one unless given) and, with
    integrity mac, one MAC key."""
    token = token or wire.new_job_token()
    key = new_mac_key() if cfg.integrity == "mac" else None
    return [
        TransposeAllReduce(
            r, world, ["127.0.0.1"] * world, policy, cfg, job_token=token, mac_key=key
        )
        for r in range(world)
    ]


def each_rank(world: int, fn: Callable[[int], None], timeout_s: float = 120.0) -> None:
    """fn(rank) in one thread per rank, all at once; the first exception is raised here."""
    errors: list[BaseException] = []

    def guarded(r: int) -> None:
        try:
            fn(r)
        except BaseException as e:  # noqa: BLE001 — surfaced by the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
    if any(t.is_alive() for t in threads):
        raise TimeoutError(f"a rank did not finish in {timeout_s:.0f} s")
    if errors:
        raise errors[0]
