"""What one rank records about one round (the `rounds` columns of analysis/schema.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RoundStats:
    """One rank's view of one all-reduce round.

    Times are CLOCK_MONOTONIC seconds, latencies ms. bytes = float32 payload bytes this rank
    sent since the previous round ended (first transmissions and repairs); nacks, retx_pkts and
    bad_dgrams count the same interval, so summing rows gives the job's totals. pkts_* and
    delivered_loss are about the data this rank had to receive in this round (scatter
    contributions to its shard plus the other ranks' reduced shards); delivered_loss is the
    element-weighted missing fraction. cpu_wait_ms is how long the transport thread was
    runnable but off the CPU during the round (/proc schedstat), the validity guard's input: a
    deadline can be overshot by at most that plus one poll tick. bad_reasons maps each
    rejection reason to its count.
    """

    round: int
    t_start_s: float
    t_end_s: float
    latency_ms: float
    scatter_ms: float
    gather_ms: float
    bytes: int
    pkts_expected: int
    pkts_received: int
    delivered_loss: float
    epsilon: float
    nacks: int
    retx_pkts: int
    cap_hit: bool
    bad_dgrams: int
    policy: str = ""
    eps_id: int = 0
    late_dgrams: int = 0
    eps_mismatch: int = 0
    t_budget_ms: float = 0.0
    cpu_wait_ms: float = 0.0  # run-queue wait of this rank's transport thread in the round
    bad_reasons: dict[str, int] = field(default_factory=dict)
