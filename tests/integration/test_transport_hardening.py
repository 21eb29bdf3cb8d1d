"""A token holder that can send from a member's address (on-path, or sharing its host): what
it can no longer do. Real Transpose AllReduce ranks on loopback (no root); the forger sends
through the member's own bound sockets, so every forged datagram passes the token and the
source check, as a spoofed packet on a real network would.

- A whole-shard NACK storm at 100/s into every rank costs rounds at most 1.2x their calm time
  (repairs capped at 3x the bytes received from the peer; a NACK vetted in O(ranges)).
- A 2-second burst of NaN (or of values >= FLT_MAX / N) in forged DATA: every round finishes,
  exact, with nothing non-finite in any result (each such datagram is dropped alone).
- With `--integrity mac`, a forged finite DATA packet changes nothing and is counted; with it
  off, the same packet changes the result (the threat the MAC answers).
"""

from __future__ import annotations

import contextlib
import random
import statistics
import threading
import time

import numpy as np
import pytest
from loopback_ranks import each_rank, loopback_job

from workloads.transport import wire
from workloads.transport.config import TransportConfig
from workloads.transport.layout import Layout
from workloads.transport.loopback import pick_udp_base

WORLD = 3
RATE = 400.0


def forge(ranks, q: int, p: int, dgram: bytes, i: int = 0) -> None:
    """Send `dgram` to rank p's socket i from member q's own socket i (a perfect spoof)."""
    ep = ranks[q].endpoint
    with contextlib.suppress(BlockingIOError, OSError):
        ep.socks[i].sendto(dgram, ep.dest[p][i])


def current_round(ranks) -> int:
    return max(0, min(tar.engine.next_round for tar in ranks) - 1)


class Forger(threading.Thread):
    """Calls `make(round)` -> [(q, p, datagram)] and sends them, `rate` batches a second."""

    def __init__(self, ranks, make, rate: float) -> None:
        super().__init__(daemon=True)
        self.ranks, self.make, self.period = ranks, make, 1.0 / rate
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        t = time.monotonic()
        while not self.stop.is_set():
            for q, p, dgram in self.make(current_round(self.ranks)):
                forge(self.ranks, q, p, dgram)
                self.sent += 1
            t += self.period
            time.sleep(max(0.0, t - time.monotonic()))


def run_rounds(ranks, inputs, first: int, count: int, eps: float = 0.0):
    """`count` rounds from round `first`: per round, each rank's (result, stats)."""
    out: list[list] = [[None] * WORLD for _ in range(count)]

    def loop(r: int) -> None:
        for t in range(count):
            out[t][r] = ranks[r].allreduce(inputs[r][(first + t) % len(inputs[r])], epsilon=eps)

    each_rank(WORLD, loop, timeout_s=200)
    return out


def check_exact(rounds, inputs, first: int) -> None:
    for t, per_rank in enumerate(rounds):
        k = (first + t) % len(inputs[0])
        exact = np.sum([inputs[r][k].astype(np.float64) for r in range(WORLD)], axis=0)
        for r, (res, _) in enumerate(per_rank):
            assert np.isfinite(res).all(), (t, r)
            np.testing.assert_allclose(res, exact, rtol=1e-5, atol=1e-4, err_msg=f"{t} {r}")


def suspects(rounds) -> dict[str, int]:
    out: dict[str, int] = {}
    for per_rank in rounds:
        for _, st in per_rank:
            for why, n in st.suspect.items():
                out[why] = out.get(why, 0) + n
    return out


def job(policy: str, seed: int, n_elems: int, **cfg):
    base = pick_udp_base(WORLD, 4, random.Random(seed))
    config = TransportConfig(rate_mbps=RATE, base_port=base, **cfg)
    token = wire.new_job_token()
    ranks = loopback_job(WORLD, policy, config, token)
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal((8, n_elems)).astype(np.float32) for _ in range(WORLD)]
    return ranks, inputs, token, config


def close(ranks) -> None:
    for tar in ranks:
        tar.close()


@pytest.mark.timeout(300)
def test_a_whole_shard_nack_storm_costs_rounds_at_most_a_fifth_more():
    n_elems, rounds = 300_000, 14
    ranks, inputs, token, cfg = job("reliable", 21, n_elems)
    lay = Layout(n_elems, WORLD, wire.elems_per_packet(cfg.mtu))
    max_ranges = wire.ranges_per_nack(cfg.mtu)

    def storm(rnd: int):
        """Into every rank p, from its next member q: a legal whole-shard NACK of each stage
        and one listing the shard in every range (the review's), for this round and next."""
        out = []
        for p in range(WORLD):
            q = (p + 1) % WORLD
            for stage, shard in ((wire.SCATTER, q), (wire.GATHER, p)):
                whole = [(0, lay.length(shard))]
                for ranges in (whole, whole * max_ranges):
                    for r in (rnd, rnd + 1):
                        dgram = wire.control_datagram(
                            wire.NACK, stage, token, r, q, shard, 0,
                            wire.nack_payload(ranges), len(ranges),
                        )  # fmt: skip
                        out.append((q, p, dgram))
        return out

    try:
        run_rounds(ranks, inputs, 0, 2)  # warm up
        calm = run_rounds(ranks, inputs, 2, rounds)
        # 100 storms a second: 100 whole-shard NACKs of each kind into each rank
        forger = Forger(ranks, lambda rnd: storm(rnd), rate=100.0 / 4)
        forger.start()
        try:
            attacked = run_rounds(ranks, inputs, 2 + rounds, rounds)
        finally:
            forger.stop.set()
            forger.join(5)
    finally:
        close(ranks)

    def medians(rs):
        return statistics.median(max(st.latency_ms for _, st in per_rank) for per_rank in rs)

    calm_ms, attacked_ms = medians(calm), medians(attacked)
    print(f"\nNACK storm: calm median {calm_ms:.1f} ms, attacked {attacked_ms:.1f} ms "
          f"({forger.sent} forged NACKs); suspect {suspects(attacked)}; repairs sent "
          f"{sum(st.retx_pkts for pr in attacked for _, st in pr)}, CPU ms "
          f"{statistics.median(sum(st.cpu_ms for _, st in pr) for pr in calm):.1f} -> "
          f"{statistics.median(sum(st.cpu_ms for _, st in pr) for pr in attacked):.1f}")  # fmt: skip
    check_exact(attacked, inputs, 2 + rounds)
    assert forger.sent > 100
    assert suspects(attacked).get("nack_order", 0) > 0
    assert attacked_ms <= 1.2 * calm_ms, (calm_ms, attacked_ms)
