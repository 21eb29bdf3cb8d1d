"""The fair floor's pattern (benchmarks/floor_pattern.py): derived from the spec and the
transport's config, ports apart, paths matched, and the per-MiB arithmetic of iperf3 reports."""

from __future__ import annotations

import pytest

from benchmarks import kernel_floor, transport_fattree_cpu
from benchmarks.floor_pattern import (
    CLIENT_BASE,
    LAST_PORT,
    MIB,
    SERVER_BASE,
    PathSearch,
    iperf3_figures,
    pattern,
    spec_pattern,
)
from testbed.network.flowpaths import Flow, udp_flows
from testbed.spec import build_spec
from workloads.transport.config import TransportConfig

HOSTS = ("h1", "h5", "h9", "h13")


def test_flow_grouping_is_one_iperf3_per_transport_flow() -> None:
    pat = pattern(HOSTS, 95.0, 1500, 47000, 4, "flow")
    assert len(pat.groups) == pat.streams == 4 * 3 * 4
    assert [g.twins[0] for g in pat.groups] == udp_flows(HOSTS, 47000, 4)
    sports = [s for g in pat.groups for s in g.sports]
    assert len(set(sports)) == len(sports)
    assert min(sports) == CLIENT_BASE and max(sports) < SERVER_BASE
    assert all((g.src, g.dst) == (g.twins[0].src, g.twins[0].dst) for g in pat.groups)


def test_pair_grouping_runs_k_streams_from_consecutive_ports() -> None:
    pat = pattern(HOSTS, 95.0, 1500, 47000, 4, "pair")
    assert len(pat.groups) == 12 and pat.streams == 48
    for g in pat.groups:
        assert g.sports == tuple(range(g.sports[0], g.sports[0] + 4))
        assert {(t.src, t.dst) for t in g.twins} == {(g.src, g.dst)}
        assert [t.sport for t in g.twins] == sorted(t.sport for t in g.twins)
    assert {(g.src, g.dst) for g in pat.groups} == {(a, b) for a in HOSTS for b in HOSTS if a != b}


@pytest.mark.parametrize("grouping", ["flow", "pair"])
@pytest.mark.parametrize("mtu", [1500, 9000])
def test_streams_together_pace_what_the_ranks_pace(grouping: str, mtu: int) -> None:
    pat = pattern(HOSTS, 95.0, mtu, 47000, 4, grouping)
    assert pat.blksize == mtu - 28
    assert pat.pair_l2_mbps == pytest.approx(95.0 / 3)
    l2_per_stream = pat.stream_bps * (pat.blksize + 42) / pat.blksize
    assert l2_per_stream * pat.streams == pytest.approx(4 * 95e6, rel=1e-6)


def test_iperf3_wakes_in_the_transports_rhythm() -> None:
    """A peer's send wake-up per PACE_BATCH (4) full frames of the pair's rate."""
    assert pattern(HOSTS, 95.0, 1500, 47000, 4, "flow").pacing_us == round(4 * 1514 * 8 / (95 / 3))
    assert pattern(HOSTS, 95.0, 9000, 47000, 4, "pair").pacing_us == round(4 * 9014 * 8 / (95 / 3))


def test_server_ports_are_distinct_for_any_choice_and_stay_ports() -> None:
    pat = pattern(HOSTS, 95.0, 1500, 47000, 4, "flow")
    n = pat.max_candidates()
    ports = {pat.server_port(g, c) for g in range(len(pat.groups)) for c in range(n)}
    assert len(ports) == len(pat.groups) * n
    assert min(ports) == SERVER_BASE and max(ports) <= LAST_PORT
    with pytest.raises(ValueError, match="server port"):
        pat.server_port(0, n + 1)


def test_bad_groupings_and_lone_workers_are_refused() -> None:
    with pytest.raises(ValueError, match="grouping"):
        pattern(HOSTS, 95.0, 1500, 47000, 4, "host")
    with pytest.raises(ValueError, match="2 workers"):
        pattern(("h1",), 95.0, 1500, 47000, 4, "flow")


def test_spec_pattern_takes_the_runs_workers_pacing_and_ports() -> None:
    spec = build_spec(workload="allreduce", workers=4, bw=100.0, mtu=9000, dilation=1.0)
    pat = spec_pattern(spec, "pair")
    assert pat.hosts == HOSTS
    assert pat.mtu == 9000
    assert pat.pair_l2_mbps == pytest.approx(spec.pace / 3)
    cfg = TransportConfig(base_port=spec.base_port)
    assert pat.k == cfg.ports_per_peer
    assert [t for g in pat.groups for t in g.twins] == udp_flows(
        HOSTS, cfg.base_port, cfg.ports_per_peer
    )
    dilated = build_spec(workload="allreduce", dilation=2.0)
    with pytest.raises(ValueError, match="D = 1"):
        spec_pattern(dilated, "flow")


def _search() -> tuple[PathSearch, dict]:
    pat = pattern(("h1", "h13"), 95.0, 1500, 47000, 2, "pair")
    twin_paths = {t: ("h1", f"e{t.sport % 2}", "h13") for g in pat.groups for t in g.twins}
    return PathSearch(pat, twin_paths), twin_paths


def test_path_search_keeps_the_first_candidate_on_every_twin_path() -> None:
    found, twin_paths = _search()
    assert found.pending() == [0, 1] and found.matched() == 0
    g = found.pat.groups[0]
    # candidate 0: one stream on its twin's path; 1: both; 2: both as well (later: not taken)
    for c, swap in ((0, (True, False)), (1, (False, False)), (2, (False, False))):
        paths = {}
        for f, t, wrong in zip(found.flows(0, c), g.twins, swap, strict=True):
            paths[f] = ("h1", "other", "h13") if wrong else twin_paths[t]
        found.offer(0, c, paths)
    assert found.ports()[0] == found.pat.server_port(0, 1)
    assert found.pending() == [1]
    assert found.matched() == 2
    found.offer(1, 0, {})  # nothing traced: no stream matches, but a port is kept
    assert found.ports()[1] == found.pat.server_port(1, 0) and found.pending() == [1]


def test_a_twin_without_a_traced_path_matches_nothing() -> None:
    found, _ = _search()
    blind = PathSearch(found.pat, {})
    blind.offer(0, 0, {})
    assert blind.matched() == 0 and blind.pending() == [0, 1]


def test_path_search_flows_are_the_groups_streams_to_the_candidate_port() -> None:
    found, _ = _search()
    g = found.pat.groups[1]
    port = found.pat.server_port(1, 3)
    assert found.flows(1, 3) == [Flow(g.src, g.dst, s, port) for s in g.sports]


def _report(host: float, remote: float, seconds: float, nbytes: int, lost: float) -> dict:
    return {
        "end": {
            "cpu_utilization_percent": {"host_total": host, "remote_total": remote},
            "sum": {
                "seconds": seconds,
                "bytes": nbytes,
                "lost_percent": lost,
                "bits_per_second": nbytes * 8 / seconds,
            },
        }
    }


def test_iperf3_figures_sum_cpu_over_clients_per_mib_delivered() -> None:
    a = _report(10.0, 5.0, 10.0, 10 * MIB, 0.0)  # 1000 + 500 ms over 10 MiB
    b = _report(20.0, 0.0, 5.0, 10 * MIB, 50.0)  # 1000 ms over 5 MiB delivered
    r = iperf3_figures([a, b])
    assert r["sender_ms_per_mib"] == pytest.approx(2000 / 15)
    assert r["receiver_ms_per_mib"] == pytest.approx(500 / 15)
    assert r["total_ms_per_mib"] == pytest.approx(2500 / 15)
    assert r["lost_percent"] == pytest.approx(25.0)
    assert r["mbps"] == pytest.approx((8 * MIB + 16 * MIB) / 1e6)
    single = iperf3_figures([_report(12.0, 6.0, 5.0, 5 * MIB, 2.0)])
    assert single["lost_percent"] == pytest.approx(2.0)
    with pytest.raises(ValueError):
        iperf3_figures([])


def test_kernel_floor_refuses_an_unknown_grouping_before_any_network() -> None:
    with pytest.raises(SystemExit, match="--group"):
        kernel_floor.main(["--fair", "--group", "host"])


def test_transport_fattree_cpu_floor_only_at_d1(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        transport_fattree_cpu.main(["--floor", "--dilation", "auto"])
    assert "D = 1" in capsys.readouterr().err


def test_ratios_divide_each_path_by_each_floor_of_its_mtu(capsys: pytest.CaptureFixture) -> None:
    floor = {
        "clients": 48, "streams": 48, "stream_mbps": 7.7, "pacing_us": 1530, "on_twin_path": 48,
        "sender_ms_per_mib": 6.0, "receiver_ms_per_mib": 4.0, "total_ms_per_mib": 10.0,
        "mbps": 380.0, "lost_percent": 0.0,
    }  # fmt: skip
    transport_fattree_cpu.print_ratios(
        {(1500, "compiled"): 42.0, (9000, "compiled"): 20.0},
        {(1500, "flow"): floor, (9000, "flow"): floor | {"total_ms_per_mib": 5.0}},
    )
    out = capsys.readouterr().out
    assert "| 1500 | compiled | 42.00 | flow | 10.00 | 4.20x |" in out
    assert "| 9000 | compiled | 20.00 | flow | 5.00 | 4.00x |" in out
