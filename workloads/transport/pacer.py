"""Token-bucket pacing: each sender->receiver pair gets rate/(N-1), repairs included.

Capping every pair (rather than only the sender's total) is what keeps Transpose AllReduce's
all-to-all and a burst of NACK repairs from self-inflicting incast: no receiver ever gets more
than (N-1) * rate/(N-1) = rate from all senders together. Peers with data are served
round-robin. Bytes are counted as L2 frames (datagram + IPv4/UDP + Ethernet headers), which is
what an HTB class on the path charges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: IPv4 + UDP + Ethernet header bytes a datagram costs on the wire beyond its own length.
WIRE_OVERHEAD = 28 + 14


class Pacer:
    """Per-peer token buckets, refilled from a monotonic clock the caller passes in.

    burst_s is the bucket depth in seconds of the pair rate (at least min_burst_bytes). It must
    exceed the event loop's wake-up granularity (poll has 1 ms resolution, and a loaded 2-core
    machine adds scheduling delay), or the pacer loses rate every time the loop wakes late.
    """

    def __init__(
        self,
        peers: Sequence[int],
        rate_mbps: float,
        now: float,
        *,
        burst_s: float = 0.003,
        min_burst_bytes: int = 4 * 1514,
    ) -> None:
        if not peers:
            raise ValueError("a pacer needs at least one peer")
        self.peers = tuple(peers)
        self.pair_bytes_per_s = rate_mbps * 1e6 / 8 / len(self.peers)
        self.depth = max(float(min_burst_bytes), self.pair_bytes_per_s * burst_s)
        self.tokens = dict.fromkeys(self.peers, self.depth)
        self._t = now
        self._cursor = 0

    def refill(self, now: float) -> None:
        """Add the tokens earned since the last refill (capped at the bucket's depth)."""
        dt = now - self._t
        if dt <= 0:
            return
        self._t = now
        add = dt * self.pair_bytes_per_s
        depth = self.depth
        tokens = self.tokens
        for p in self.peers:
            v = tokens[p] + add
            tokens[p] = v if v < depth else depth

    def next_peer(self, now: float, wants: Mapping[int, int]) -> int | None:
        """The next peer, round-robin, that has a packet waiting (wants[p] = its wire bytes)
        and the tokens to send it; None if no such peer right now."""
        self.refill(now)
        n = len(self.peers)
        for k in range(n):
            idx = (self._cursor + k) % n
            p = self.peers[idx]
            need = wants.get(p)
            if need is not None and self.tokens[p] >= need:
                self._cursor = (idx + 1) % n
                return p
        return None

    def consume(self, peer: int, wire_bytes: int) -> None:
        self.tokens[peer] -= wire_bytes

    def wait_s(self, now: float, wants: Mapping[int, int]) -> float | None:
        """Seconds until some waiting peer has `wants[p]` bytes of tokens (at most the bucket's
        depth: more never accumulates); None if nobody waits."""
        self.refill(now)
        best: float | None = None
        depth = self.depth
        for p, need in wants.items():
            short = (need if need < depth else depth) - self.tokens[p]
            w = max(0.0, short / self.pair_bytes_per_s)
            if best is None or w < best:
                best = w
        return best
