import json

from analysis import schema
from testbed.run import results, validity


def _step(rank, step):
    return dict(
        run_id="r",
        rank=rank,
        step=step,
        epoch=0,
        t_start_s=float(step),
        compute_ms=1.0,
        comm_ms=2.0,
        step_ms=3.0,
        train_loss=0.5,
        lr=0.1,
    )


def test_merge_keeps_rows_of_a_torn_writer(tmp_path):
    for rank in (0, 1):
        d = tmp_path / f"rank{rank}"
        d.mkdir()
        lines = [json.dumps(_step(rank, s)) for s in range(3)]
        (d / "steps.jsonl").write_text(
            "\n".join(lines) + ("\n" if rank else '\n{"run_id": "r", "ra')
        )
    counts = results.merge_rank_tables(tmp_path)
    assert counts == {"rounds": 0, "steps": 6, "evals": 0}
    steps = schema.read_table(tmp_path, "steps")
    assert sorted(steps["rank"].unique()) == [0, 1]


def test_last_points_at_newest(tmp_path):
    a = results.create_run_dir(tmp_path, "a")
    b = results.create_run_dir(tmp_path, "b")
    results.point_last(tmp_path, a)
    results.point_last(tmp_path, b)
    assert (tmp_path / "last").resolve() == b.resolve()


def test_cpu_pressure_and_tcp_counters_parse():
    psi = (
        "some avg10=1.50 avg60=0.80 avg300=0.20 total=12345\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    assert validity.read_cpu_pressure(psi) == {
        "some_avg10": 1.5,
        "some_total": 12345.0,
        "full_avg10": 0.0,
        "full_total": 0.0,
    }
    netstat = "TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes\nTcpExt: 0 7 3\n"
    snmp = "Ip: Forwarding\nIp: 1\nTcp: RtoAlgorithm RetransSegs\nTcp: 1 42\n"
    c = validity.parse_tcp_counters(netstat, snmp)
    assert c == {"TCPTimeouts": 7, "TCPLossProbes": 3, "RetransSegs": 42}
    assert validity.counter_delta(c, {**c, "TCPTimeouts": 10})["TCPTimeouts"] == 3


def test_cpu_wait_is_the_longest_single_thread_wait():
    from workloads.transport.schedstat import max_wait_ms, schedstat_waits

    before = {"1": 1_000_000, "2": 5_000_000}
    after = {"1": 4_000_000, "2": 6_000_000, "3": 2_500_000}  # thread 3 started mid-round
    assert max_wait_ms(before, after) == 3.0
    assert max_wait_ms({}, {}) == 0.0
    now = schedstat_waits()
    assert now and all(w >= 0 for w in now.values())  # this process's own threads, live
