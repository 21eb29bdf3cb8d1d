"""The stop rule and the paper's control channel over real sockets on loopback (no root).

One LoopbackJob of 4 ranks. Calm rounds at ε = 0.4: `--stop early` skips bytes and ends the
round sooner than `--stop idle`. At 90 % injected loss on every datagram, with `--control tcp`
and no effective cap (t_max = 1000 x the calibrated p50), mlt at P = 0.008 and dblp at
P = 0.408 (stop early) end every round by their rule: no cap hit, delivered loss <= ε.
"""

from __future__ import annotations

import numpy as np
import pytest

from workloads.transport.loopback import Case, LoopbackJob

RATE = 100.0
N = 1 << 17  # 512 KiB


@pytest.fixture(scope="module")
def job4():
    with LoopbackJob(4, seed=7) as j:
        yield j


def _latency(res) -> np.ndarray:
    return np.max([[s["latency_ms"] for s in r.stats] for r in res], axis=0)


@pytest.mark.timeout(240)
def test_stop_early_skips_bytes_and_ends_sooner(job4):
    out = {}
    for stop in ("early", "idle"):
        cfg = {"rate_mbps": RATE, "stop": stop}
        res = job4.run(Case("dblp", N, 6, cfg, 0.4, calibrate_rounds=2))
        skipped = sum(s["skipped_scatter"] + s["skipped_gather"] for r in res for s in r.stats)
        assert all(s["delivered_loss"] <= 0.4 for r in res for s in r.stats)
        out[stop] = (float(np.median(_latency(res))), skipped)
    assert out["early"][1] > 0 and out["idle"][1] == 0
    assert out["early"][0] < out["idle"][0], out


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("transport", "eps", "stop"), [("mlt", 0.008, "idle"), ("dblp", 0.408, "early")]
)
def test_the_paper_rule_ends_rounds_at_90_percent_loss(job4, transport, eps, stop):
    cfg = {"rate_mbps": RATE, "drop": 0.9, "control": "tcp", "stop": stop, "t_max_p50": 1000}
    res = job4.run(Case(transport, N // 4, 3, cfg, eps, calibrate_rounds=2))
    for r in res:
        for s in r.stats:
            assert not s["cap_hit"], (r.rank, s)
            assert s["delivered_loss"] <= eps, (r.rank, s)
            assert s["passes_scatter"] > 1 and s["passes_gather"] > 1  # repaired in passes
