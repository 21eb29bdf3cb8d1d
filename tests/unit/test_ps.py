"""`--collective ps`, its pure parts: the layout with one owner, a server's reduce and a
worker's fill with the workers' N, the round announcement, the spec's refusals, and where and
how the testbed starts the server."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from testbed.bursts import schedule
from testbed.run.launch import Placement, WorkerGroup, server_argv
from testbed.run.plan import plan
from testbed.spec import RunSpec, SpecError, build_spec
from topologies import fattree, star
from workloads import args as worker_args
from workloads.spec import MASTER_PORT
from workloads.transport import wire
from workloads.transport.completion import Dblp, OptiReduce, Reliable
from workloads.transport.hooks.udp import UdpState
from workloads.transport.layout import Layout
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.ps import DONE, Announce, ParameterServer
from workloads.transport.roundstate import RoundState, Timing

PER = 10


def test_the_owner_holds_the_whole_bucket_and_the_others_none():
    lay = Layout(25, 4, PER, owner=3)
    assert [lay.length(j) for j in range(4)] == [0, 0, 0, 25]
    assert lay.start(3) == 0 and lay.npkts(3) == 3 and lay.npkts(0) == 0
    assert lay.contributors == 3 and not lay.contributes(3) and lay.contributes(0)
    assert Layout(25, 4, PER).contributors == 4  # the transpose: every rank
    for bad in (4, -1):
        with pytest.raises(ValueError):
            Layout(25, 4, PER, owner=bad)


def _server_round(policy, got: dict[int, list[bool]]) -> RoundState:
    """The server (rank 3 of 3 workers + 1) after the packets in `got` arrived, each worker
    sending ones; its own input is zeros."""
    lay = Layout(20, 4, PER, owner=3)
    rs = RoundState(0, 3, lay, np.zeros(20, np.float32), policy, 0.5, 0, 0.0,
                    Timing(1, 0.1, 0.002, 1e-4))  # fmt: skip
    for w, pkts in got.items():
        for i, ok in enumerate(pkts):
            if ok:
                rs.sc_got[w][i] = True
                rs.partial[i * PER : (i + 1) * PER] += 1.0
                rs.sc_count[i] += 1
                rs.sc.received += PER
    return rs


def test_the_server_reduces_over_the_workers_only():
    # packet 1 of worker 2 lost: element sums are 3 (packet 0) and 2 (packet 1)
    got = {0: [True, True], 1: [True, True], 2: [True, False]}
    rs = _server_round(Dblp(fill="rescale"), got)
    assert rs.sc.expected == 3 * 20 and rs.sc.peers == 3
    assert rs.ga.expected == 0  # the server gathers nothing
    rs.end_scatter(0.0, False)
    # rescaled by N / contributions with N = 3 workers (the server's zeros count for nothing)
    assert np.allclose(rs.reduced, [3.0] * 10 + [3.0] * 10)
    rs = _server_round(Dblp(fill="zero"), got)
    rs.end_scatter(0.0, False)
    assert np.allclose(rs.reduced, [3.0] * 10 + [2.0] * 10)


def test_no_contribution_at_all_stays_zero_not_nan():
    rs = _server_round(Dblp(fill="rescale"), {0: [True, False], 1: [True, False], 2: [True, False]})
    rs.end_scatter(0.0, False)
    assert np.isfinite(rs.reduced).all() and np.allclose(rs.reduced[10:], 0.0)


def test_a_worker_sends_everything_to_the_server_and_fills_with_the_workers_n():
    lay = Layout(20, 4, PER, owner=3)
    own = np.arange(20, dtype=np.float32)
    rs = RoundState(0, 1, lay, own, Dblp(fill="rescale"), 0.5, 0, 0.0, Timing(1, 0.1, 0.002, 1e-4))
    assert rs.sc.expected == 0 and rs.ga.expected == 20 and rs.ga.peers == 1
    assert Reliable().verdict(rs.sc, 0.0).done  # the scatter stage is nothing to wait for
    rs.end_scatter(0.0, False)
    rs.finish()  # nothing gathered: every element is filled
    assert np.allclose(rs.out, 3 * own)  # N x own, so the hook's mean (/ 3) is own
    rs = RoundState(0, 1, lay, own, OptiReduce(), 0.0, 0, 0.0, Timing(1, 0.1, 0.002, 1e-4))
    rs.end_scatter(0.0, False)
    rs.finish()
    assert np.allclose(rs.out, own)


def test_the_announcement_round_trips_and_done_ends_the_server():
    a = Announce(1 << 20, 0.408, 7, False, True, 1234.5, None)
    assert Announce.of(a.frame()) == a
    assert Announce.of(DONE) is None


def test_the_pacing_bound_is_the_servers_link_twice_over_n_buckets():
    ps = object.__new__(ParameterServer)  # no sockets: the bound is arithmetic
    ps.world, ps.owner = 4, 3
    ps.config = SimpleNamespace(mtu=1500, rate_mbps=100.0)
    n = 1 << 18
    per = wire.elems_per_packet(1500)
    wire_bytes = n * 4 + -(-n // per) * (wire.HEADER_BYTES + WIRE_OVERHEAD)
    assert ps.bound_ms(n) == pytest.approx(2 * 3 * wire_bytes * 8 / 100e6 * 1e3, rel=1e-3)
    assert ps.contributors == 3 and ps.server == 3


def test_the_hook_divides_by_the_workers():
    tar = SimpleNamespace(world=4, contributors=3, rank=0)
    state = UdpState(tar, "dblp", None)
    try:
        assert state.world == 3
    finally:
        state._queue.put(None)


@pytest.mark.parametrize(
    "flags, field",
    [({"collective": "ps", "transport": "tcp"}, "collective"),
     ({"collective": "ps", "workers": 1}, "collective"),
     ({"collective": "bus"}, "collective")],
)  # fmt: skip
def test_bad_ps_specs_name_the_field(flags, field):
    with pytest.raises(SpecError) as e:
        build_spec(**flags)
    assert e.value.field == field


def test_the_worker_refuses_ps_over_tcp_with_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        worker_args.parse_args(["--transport", "tcp", "--collective", "ps"])
    assert e.value.code == 2
    assert "--collective" in capsys.readouterr().err


def test_the_default_collective_keeps_the_hash():
    assert RunSpec(collective="tar").spec_hash() == RunSpec().spec_hash() == "6722478804d5"
    assert RunSpec(collective="ps").spec_hash() != RunSpec().spec_hash()


def test_the_server_gets_the_host_a_next_worker_would():
    topo = fattree(4)
    assert schedule.place_server(topo, 3) == "h13"  # a pod of its own
    assert schedule.place_server(topo, 4) == "h2"
    with pytest.raises(ValueError, match="workers"):
        schedule.place_server(star(3), 3)


def test_plan_places_the_server_apart_and_only_for_ps():
    p = plan(build_spec(workload="allreduce", collective="ps", workers=3, dilation=1))
    assert p.worker_hosts == ("h1", "h5", "h9") and p.server_host == "h13"
    assert plan(build_spec(workload="allreduce", workers=3, dilation=1)).server_host is None
    with pytest.raises(SpecError) as e:
        plan(build_spec(topo="star", n=3, workers=3, collective="ps", dilation=1))
    assert e.value.field == "workers"


def test_server_argv_is_the_workers_spec_and_rendezvous(tmp_path):
    placement = Placement(("h1", "h5", "h9"), ("10.0.0.2", "10.1.0.2", "10.2.0.2"),
                          "h13", "10.3.0.2")  # fmt: skip
    argv = server_argv(tmp_path / "worker_spec.json", placement, tmp_path, "r1")
    assert argv[1:3] == ["-m", "workloads.ps_server"]
    flag = {a: argv[i + 1] for i, a in enumerate(argv) if a.startswith("--")}
    assert flag["--world"] == "3" and flag["--addr"] == "10.3.0.2"
    assert flag["--master-addr"] == "10.0.0.2" and flag["--master-port"] == str(MASTER_PORT)
    assert "--rank" not in flag
    with pytest.raises(ValueError):
        server_argv(tmp_path / "s.json", Placement(("h1",), ("10.0.0.2",)), tmp_path, "r1")


def test_the_group_watches_and_stops_the_server_by_pid(tmp_path):
    def proc(code: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)

    worker = proc("print('w')")
    server = proc("import time; print('s', flush=True); time.sleep(60)")
    group = WorkerGroup([worker], tmp_path, server)
    group.start_readers()
    worker.wait(10)
    assert group.failed() is None and not group.all_done()  # the server still runs
    log = tmp_path / "server" / "server.log"
    deadline = time.monotonic() + 20  # the event: the server's line reached its log
    while not (log.exists() and log.read_text() == "s\n") and time.monotonic() < deadline:
        time.sleep(0.01)
    group.stop()
    assert server.poll() is not None
    assert group.failed() == (1, server.returncode)  # rank N: the server
    assert (tmp_path / "server" / "server.log").read_text() == "s\n"
    assert "s" in group.tail(1)


def test_fidelity_judges_a_ps_worker_against_the_servers_link():
    import pandas as pd

    from analysis import fidelity, schema

    payload = float(1 << 20)
    wire_bytes = payload + np.ceil(payload / 1432) * fidelity.DGRAM_OVERHEAD
    lat = 6 * 1.1 * wire_bytes * 8 / (95.0 * 1e3)  # 1.1 x 2 N S / B with N = 3 workers
    rounds = pd.DataFrame({
        "run_id": "r", "round": np.arange(30), "stage": "total", "is_warmup": False,
        "t_start_s": np.arange(30.0), "t_end_s": np.arange(30.0) + lat / 1e3,
        "latency_ms": lat, "bytes": int(payload), "cpu_wait_ms": 0.0, "loop_late_ms": 0.5,
    })  # fmt: skip

    def info(collective: str) -> schema.RunInfo:
        spec = {"bw": 100.0, "mtu": 1500, "workers": 3, "collective": collective}
        params = {"config": {"rate_mbps": 95.0}, "gap_ms": 2.0}
        return schema.RunInfo(run_id="r", status="ok", spec=spec, transport_params=params)

    assert fidelity.judge(rounds, schema.empty("bursts"), info("ps")).faithful
    assert not fidelity.judge(rounds, schema.empty("bursts"), info("tar")).faithful


@pytest.mark.parametrize(
    "args, field, why",
    [(["--collective", "ps", "--transport", "tcp"], "collective", "UDP transports"),
     (["--collective", "ps", "--workers", "1"], "collective", "at least 2 workers"),
     (["--collective", "ps", "--topo", "star", "--n", "3", "--workers", "3"], "workers",
      "need 4 hosts")],
)  # fmt: skip
def test_testbed_run_refuses_bad_ps_with_exit_2(args, field, why, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from testbed.cli import app
    from testbed.run import experiment

    def refuse(*_a, **_k):
        raise AssertionError("run_experiment reached: bad input got past planning")

    monkeypatch.setattr(experiment, "run_experiment", refuse)
    res = CliRunner().invoke(app, ["run", *args, "--dilation", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert f"invalid spec: {field}:" in res.output and why in res.output, res.output


def test_a_paper_event_impairs_the_servers_downlink_too():
    """Under ps, stage 1's flows end at the server: its downlink is impaired with the workers'
    so every flow crosses exactly one lossy link, as under the transpose."""
    p = plan(build_spec(workload="allreduce", collective="ps", workers=3, rounds=12,
                        burst="paper-90", dilation=1))  # fmt: skip
    hit = {e.round for e in p.events}
    assert 2 <= len(hit) <= 3
    downlinks = {(e.link, e.direction.dst) for e in p.events if e.round == min(hit)}
    assert len(downlinks) == 4, downlinks
    assert {dst for _, dst in downlinks} == {"h1", "h5", "h9", "h13"}


def test_the_server_side_allreduce_takes_every_keyword_the_transposes_does():
    """The hooks and the round observer call `allreduce` with the transpose's keywords; the
    ps subclass once lacked `round_id` and every ps run failed at its first round."""
    import inspect

    from workloads.transport.ps import ParameterServer
    from workloads.transport.tar import TransposeAllReduce

    def keywords(f):
        return {n for n, p in inspect.signature(f).parameters.items() if p.kind is p.KEYWORD_ONLY}

    assert keywords(TransposeAllReduce.allreduce) <= keywords(ParameterServer.allreduce)
