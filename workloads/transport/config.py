"""Transport settings shared by every rank of a job (the contract in notes/contracts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MIB = 1 << 20


@dataclass(frozen=True)
class TransportConfig:
    """One job's transport parameters; every rank must use the same values.

    rate_mbps is each rank's total pacing rate in Mbit/s (L2 bytes on the wire); each
    sender->receiver pair gets rate/(N-1), repairs included. t_max_ms=None means "t_max_p50 x
    the calibrated burst-free p50" (see TransposeAllReduce.calibrate): the hard cap of every
    policy, and the whole timeout of optireduce's fixed mode, so it is the axis a comparison
    with the bounded-time baseline sweeps. drop is a seeded loss
    injected at the receiving socket, for tests and the loopback benchmark only. time_scale is
    the run's time dilation D (testbed/dilation.py): the caller gives rate and t_max already
    scaled; the transport scales its own fixed time constants (the idle detector's floor).
    fastpath: run the compiled data path (fastpath.c: taking received DATA, staging first
    transmissions) when it is built; False keeps the Python path alone (the benchmarks' A/B).
    """

    rate_mbps: float = 100.0
    mtu: int = 1500
    ports_per_peer: int = 4
    base_port: int = 47000
    t_max_ms: float | None = None
    t_max_p50: float = 4.0
    optireduce_mode: Literal["adaptive", "fixed"] = "adaptive"
    rescale: bool = False
    sock_buf_bytes: int = 32 * MIB
    drop: float = 0.0
    seed: int = 0
    time_scale: float = 1.0
    fastpath: bool = True

    def __post_init__(self) -> None:
        if not self.rate_mbps > 0:
            raise ValueError(f"rate_mbps must be > 0, got {self.rate_mbps}")
        if not 576 <= self.mtu <= 65535:
            raise ValueError(f"mtu must be in [576, 65535], got {self.mtu}")
        if not 1 <= self.ports_per_peer <= 64:
            raise ValueError(f"ports_per_peer must be in [1, 64], got {self.ports_per_peer}")
        if not 1024 <= self.base_port <= 65535:
            raise ValueError(f"base_port must be in [1024, 65535], got {self.base_port}")
        if self.t_max_ms is not None and not self.t_max_ms > 0:
            raise ValueError(f"t_max_ms must be > 0 or None, got {self.t_max_ms}")
        if not 1.0 < self.t_max_p50 <= 1000.0:
            raise ValueError(f"t_max_p50 must be in (1, 1000], got {self.t_max_p50}")
        if self.optireduce_mode not in ("adaptive", "fixed"):
            raise ValueError(f"optireduce_mode must be adaptive|fixed, got {self.optireduce_mode}")
        if self.sock_buf_bytes < 65536:
            raise ValueError(f"sock_buf_bytes must be >= 65536, got {self.sock_buf_bytes}")
        if not 0.0 <= self.drop < 1.0:
            raise ValueError(f"drop must be in [0, 1), got {self.drop}")
        if not self.time_scale >= 1.0:
            raise ValueError(f"time_scale must be >= 1, got {self.time_scale}")

    def last_port(self, world: int) -> int:
        """Highest UDP port a job of `world` ranks binds (base + rank*k + i)."""
        return self.base_port + world * self.ports_per_peer - 1
