"""The engine profile's pure parts (benchmarks/procfs.py, syscall_counts.py): /proc, strace -c
and perf stat text as recorded, and the per-MiB arithmetic of a window."""

from __future__ import annotations

import pytest

from benchmarks import transport_profile
from benchmarks.procfs import (
    NetCounts,
    TaskTimes,
    busiest,
    descends,
    is_rank,
    parse_ctxt_switches,
    parse_net_dev,
    parse_ppid,
    parse_stat_times,
)
from benchmarks.syscall_counts import (
    MIB,
    Calls,
    cpu_figures,
    parse_perf_stat,
    parse_strace_c,
    syscall_rows,
)

STRACE_C = """\
strace: Process 12345 attached
strace: Process 12345 detached
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.31    0.081233          21      3812           sendmmsg
 30.02    0.046612           9      4980      1205 recvmmsg
 12.10    0.018790           4      4102           poll
  3.20    0.004969           5       900       100 futex
  2.37    0.003681           3      1100           read
------ ----------- ----------- --------- --------- ----------------
100.00    0.155285          10     14894      1305 total
"""

PERF_STAT = """\
3812,,syscalls:sys_enter_sendmmsg,5001234567,100.00,,
0,,syscalls:sys_enter_sendmsg,5001234567,100.00,,
4980,,syscalls:sys_enter_recvmmsg,5001234567,100.00,,
<not counted>,,syscalls:sys_enter_select,0,0.00,,
4102,,syscalls:sys_enter_poll,5001234567,100.00,,
15894,,raw_syscalls:sys_enter,5001234567,100.00,,
"""

NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
h1-eth0:1514000    1000    0    0    0     0          0         0  3028000     2000    0    0    0     0       0          0
"""  # noqa: E501

STATUS = """\
Name:\tpython3
State:\tS (sleeping)
Tgid:\t12345
PPid:\t999
voluntary_ctxt_switches:\t4821
nonvoluntary_ctxt_switches:\t37
"""


def test_strace_c_table_by_syscall_without_noise_or_total() -> None:
    counts = parse_strace_c(STRACE_C)
    assert counts == {
        "sendmmsg": Calls(3812, 0),
        "recvmmsg": Calls(4980, 1205),
        "poll": Calls(4102, 0),
        "futex": Calls(900, 100),
        "read": Calls(1100, 0),
    }


def test_perf_stat_by_syscall_with_its_total_and_no_uncounted() -> None:
    counts = parse_perf_stat(PERF_STAT)
    assert counts["sendmmsg"] == Calls(3812, None)
    assert counts["*"] == Calls(15894, None)
    assert counts["sendmsg"].calls == 0
    assert "select" not in counts


def test_proc_text_parsers() -> None:
    stat = "12345 (python3 (a) b) S 1 12345 12345 0 -1 4194304 1234 0 0 0 250 75 0 0 20 0 30"
    assert parse_stat_times(stat) == (250, 75)
    assert parse_ctxt_switches(STATUS) == (4821, 37)
    assert parse_ppid(STATUS) == 999
    assert parse_net_dev(NET_DEV) == NetCounts(1514000, 1000, 3028000, 2000)


def test_window_deltas_and_the_busiest_thread() -> None:
    a = TaskTimes(10, 1, 2, 3, 4)
    assert TaskTimes(15, 2, 4, 6, 8).minus(a) == TaskTimes(5, 1, 2, 3, 4)
    assert NetCounts(5, 6, 7, 8).minus(NetCounts(1, 1, 1, 1)) == NetCounts(4, 5, 6, 7)
    before = {1: TaskTimes(900, 0, 0, 0, 0), 2: TaskTimes(100, 0, 0, 0, 0)}
    after = {
        1: TaskTimes(950, 0, 0, 0, 0),
        2: TaskTimes(400, 0, 0, 0, 0),
        3: TaskTimes(60, 0, 0, 0, 0),
    }
    assert busiest(before, after) == 2  # most run time in the window, not the most so far


def test_a_worker_is_found_by_rank_below_the_run() -> None:
    argv = ["/venv/bin/python", "-m", "workloads.train", "--spec", "s.json", "--rank", "1"]
    assert is_rank(argv, 1) and not is_rank(argv, 0)
    assert not is_rank(["python", "-m", "workloads.ps_server", "--rank", "1"], 1)
    assert not is_rank(["python", "-m", "workloads.train", "--rank"], 1)
    parents = {40: 30, 30: 20, 20: 1, 1: None, 7: 8, 8: 7}
    assert descends(40, 20, parents.get) and descends(20, 20, parents.get)
    assert not descends(40, 99, parents.get)
    assert not descends(7, 99, parents.get)  # a cycle ends the walk


def _net(mib: float, packets: int, rx_packets: int = 0) -> NetCounts:
    return NetCounts(0, rx_packets, int(mib * MIB) + 42 * packets, packets)


def test_cpu_figures_per_mib_of_payload_sent() -> None:
    task = TaskTimes(run_ns=50_000_000, utime_ticks=3, stime_ticks=2, voluntary=500, involuntary=10)
    r = cpu_figures(task, 80_000_000, _net(10, 1000), clk_tck=100)
    assert r["mib"] == pytest.approx(10)
    assert r["cpu_ms_per_mib"] == pytest.approx(5.0)
    assert r["user_ms_per_mib"] == pytest.approx(3.0)
    assert r["sys_ms_per_mib"] == pytest.approx(2.0)
    assert r["wakeups_per_mib"] == pytest.approx(50.0)
    assert r["preemptions_per_mib"] == pytest.approx(1.0)
    assert r["process_ms_per_mib"] == pytest.approx(8.0)
    with pytest.raises(ValueError, match="sent nothing"):
        cpu_figures(task, 0, NetCounts(0, 0, 0, 0), clk_tck=100)


def test_syscall_rows_per_mib_with_datagrams_per_call() -> None:
    rows = syscall_rows(parse_strace_c(STRACE_C), _net(2, 7624, rx_packets=7550))
    by = {r["syscall"]: r for r in rows}
    assert [r["syscall"] for r in rows[:3]] == ["recvmmsg", "poll", "sendmmsg"]
    assert by["sendmmsg"]["per_mib"] == pytest.approx(1906)
    assert by["sendmmsg"]["datagrams_per_call"] == pytest.approx(2.0)
    assert by["recvmmsg"]["datagrams_per_call"] == pytest.approx(7550 / 3775)
    assert by["recvmmsg"]["failed"] == pytest.approx(1205 / 4980)
    assert by["poll"]["failed"] == 0 and "datagrams_per_call" not in by["poll"]
    assert by["(send)"]["per_mib"] == pytest.approx(1906)
    assert by["(wait)"]["per_mib"] == pytest.approx(2051)
    assert by["(all)"]["per_mib"] == pytest.approx(14894 / 2)
    perf = {r["syscall"]: r for r in syscall_rows(parse_perf_stat(PERF_STAT), _net(2, 7624))}
    assert perf["(all)"]["per_mib"] == pytest.approx(15894 / 2)
    assert perf["recvmmsg"]["failed"] is None


def test_profile_refuses_a_rank_outside_the_job() -> None:
    with pytest.raises(SystemExit):
        transport_profile.main(["--rank", "4", "--workers", "4"])


def test_profile_block_prints_both_windows(capsys: pytest.CaptureFixture) -> None:
    cpu = cpu_figures(TaskTimes(50_000_000, 3, 2, 500, 10), 80_000_000, _net(10, 1000), 100)
    rows = syscall_rows(parse_strace_c(STRACE_C), _net(2, 7624, rx_packets=7550))
    found = {"pid": 1, "tid": 2, "cpu": cpu, "rows": rows}
    transport_profile.print_block(1500, "compiled", 0, "strace", found, {"cpu_ms_per_mib": 40.0})
    out = capsys.readouterr().out
    assert "| 5.00 | 3.00 | 2.00 | 50.0 | 1.0 | 8.00 |" in out
    assert "| sendmmsg | 1906.0 | 0% | 2.0 |" in out
    assert "| recvmmsg | 2490.0 | 24% | 2.0 |" in out
    assert "the run: 40.00 ms/MiB" in out
