"""What one rank records about one round (the `rounds` columns of analysis/schema.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RoundStats:
    """One rank's view of one all-reduce round.

    Times are CLOCK_MONOTONIC seconds, latencies ms. bytes = float32 payload bytes this rank
    sent since the previous round ended (first transmissions and repairs); nacks, retx_pkts and
    `suspect` count the same interval, so summing rows gives the job's totals. pkts_* and
    delivered_loss are about the data this rank had to receive in this round (scatter
    contributions to its shard plus the other ranks' reduced shards); delivered_loss is the
    element-weighted missing fraction. cpu_wait_ms is how long the transport thread was
    runnable but off the CPU during the round (/proc schedstat): a deadline can be overshot by
    at most that plus one poll tick. loop_late_ms is the worst lateness of the event loop's
    timer wake-ups in the round (woken after it asked to be): set against the protocol's own
    time constants (idle gap, pacer tick), it says whether the CPU distorted the round's
    timing, which the fidelity verdict judges. `suspect` maps a reason to a count of datagrams
    dropped as suspect input (wrong token, not from the member it names, a wrong MAC,
    non-finite or overflowing values, out of the round window, malformed or disordered NACK
    ranges, repair budget exceeded, ...); `eps_mismatch` is the
    one reason whose datagrams were used: a member whose ε decision differed from this rank's.
    skipped_* = payload bytes of each stage this rank did not send because the receiver said
    Stop (first transmissions and repairs; same interval as `bytes`). passes_* = each stage's
    passes as this rank received it: 1 (the first transmission) + the repair requests it sent
    the most-asked peer (NACKs, or bitmaps answering probes).
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
    policy: str = ""
    cpu_ms: float = 0.0  # CPU time of the transport's event loop in the round
    cpu_wait_ms: float = 0.0
    loop_late_ms: float = 0.0
    suspect: dict[str, int] = field(default_factory=dict)
    skipped_scatter: int = 0
    skipped_gather: int = 0
    passes_scatter: int = 0
    passes_gather: int = 0

    @property
    def bad_dgrams(self) -> int:
        return sum(self.suspect.values())
