"""`--collective ps` over real UDP sockets on loopback (no root): 3 workers and the parameter
server, a process of its own that joins each case's transport group through the job's store,
as under the testbed. Loss is injected at the receiving socket (seeded), control included."""

from __future__ import annotations

import pytest

from workloads.transport.loopback import Case, LoopbackJob

RATE = 400.0
TOL = 1e-4  # float32: sums of N standard normals differ only in rounding order
WORKERS = 3


@pytest.fixture(scope="module")
def job():
    with LoopbackJob(WORKERS, seed=3, server=True) as j:
        yield j


def _check_exact(res, rounds: int, what: str) -> None:
    assert [r.rank for r in res] == [*range(WORKERS), WORKERS]  # the server reports as rank N
    for r in res:
        assert len(r.stats) == rounds, what
        for st in r.stats:
            assert st["delivered_loss"] == 0.0 and not st["cap_hit"], what
            assert st["suspect"] == {}, what
    for r in res[:WORKERS]:
        assert max(r.err_exact) <= TOL and max(r.err_gloo) <= TOL, f"{what} rank {r.rank}"


@pytest.mark.timeout(240)
def test_reliable_gives_the_exact_sum_and_matches_the_transpose(job):
    for n in (1, WORKERS, 1000, 2**18 + 3):
        cfg = {"rate_mbps": RATE}
        ps = job.run(Case("reliable", n, 2, cfg, compare_gloo=True, seed=n, collective="ps"))
        _check_exact(ps, 2, f"ps n={n}")
        # the transpose on the same inputs: both equal Gloo's sum, hence each other
        tar = job.run(Case("reliable", n, 2, cfg, compare_gloo=True, seed=n))
        assert len(tar) == WORKERS
        for a, b in zip(ps[:WORKERS], tar, strict=True):
            assert max(a.err_exact) <= TOL and max(b.err_exact) <= TOL


@pytest.mark.timeout(240)
def test_calibration_reaches_the_server(job):
    res = job.run(Case("dblp", 20_000, 2, {"rate_mbps": RATE}, 0.0, calibrate_rounds=3,
                       collective="ps"))  # fmt: skip
    workers, server = res[:WORKERS], res[WORKERS]
    assert server.t_max_ms == workers[0].t_max_ms and server.p50_ms == workers[0].p50_ms
    assert all(r.p50_ms == workers[0].p50_ms for r in workers)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "extra",
    [{}, {"stop": "early", "control": "tcp"}],
    ids=["idle-udp", "early-tcp"],
)
def test_dblp_under_loss_stays_within_epsilon(job, extra):
    eps = 0.4
    cfg = {"rate_mbps": RATE, "drop": 0.5, "t_max_ms": 5000.0, **extra}
    res = job.run(Case("dblp", 60_000, 4, cfg, eps, seed=5, collective="ps"))
    for r in res:
        for st in r.stats:
            assert not st["cap_hit"], f"rank {r.rank}: {st}"
            assert st["delivered_loss"] <= eps + 1e-3, f"rank {r.rank}: {st['delivered_loss']}"
            assert st["epsilon"] == eps
    server = res[WORKERS].stats
    assert all(st["pkts_expected"] > 0 for st in server)  # it received the reduce stage
