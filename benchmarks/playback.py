"""Events played on a warmed-up fat-tree under an iperf3 probe, and a table of their lag.

Lag is applied - planned per `bursts` row: on (the event's start acknowledged by its
namespace) and off (its end). An event cut short by the stop has no planned off to compare,
so off lags count only the rows reverted at or after their planned end.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Iterator

from testbed.bursts.scheduler import BurstScheduler
from testbed.run import probes
from topologies import fattree

__all__ = ["LAG_HEADER", "lag_row", "lags_ms", "play", "warm_fattree"]

LAG_HEADER = (
    "| what | rows | on median | on p95 | on max | off median | off max |\n"
    "|---|---|---|---|---|---|---|"
)


@contextlib.contextmanager
def warm_fattree(seed: int = 0) -> Iterator:
    """The default fat-tree (k=4, 100 Mbit/s, pfifo 50), ARP caches warm on the probes' paths."""
    from testbed.network.live import live_network

    topo = fattree(4)
    with live_network(topo, seed=seed) as net:
        for h in ("h1", "h9", "h16"):
            net.exec(h, ["ping", "-c1", "-W2", topo.host_ip("h13")], timeout=5)
        yield net


def play(net, events, backend: str, seconds: float, src="h16", dst="h1", mbps=20.0):
    """(probe rows, bursts rows) of the events played under a UDP iperf3 probe src -> dst."""
    sched = BurstScheduler(net, events, backend, "bench")
    sched.prepare()
    try:
        rows = probes.run_probe(net, sched, "iperf3", src, dst, seconds, run_id="bench", mbps=mbps)
    finally:
        bursts = sched.stop()
    return rows, bursts


def lags_ms(bursts: list[dict]) -> tuple[list[float], list[float]]:
    """(on lags, off lags) in ms over the rows that have them."""
    on = [
        (b["applied_start_s"] - b["planned_start_s"]) * 1000
        for b in bursts
        if not math.isnan(b["applied_start_s"])
    ]
    off = [
        (b["applied_end_s"] - b["planned_end_s"]) * 1000
        for b in bursts
        if not math.isnan(b["applied_end_s"]) and b["applied_end_s"] >= b["planned_end_s"]
    ]
    return on, off


def lag_row(what: str, bursts: list[dict]) -> str:
    """One row under LAG_HEADER."""
    on, off = lags_ms(bursts)
    if not on:
        return f"| {what} | {len(bursts)} | - | - | - | - | - |"
    p95 = statistics.quantiles(on, n=20, method="inclusive")[-1] if len(on) > 1 else on[0]
    off_median = f"{statistics.median(off):.2f}" if off else "-"
    off_max = f"{max(off):.2f}" if off else "-"
    return (
        f"| {what} | {len(bursts)} | {statistics.median(on):.2f} | {p95:.2f} | {max(on):.2f} | "
        f"{off_median} | {off_max} |"
    )
