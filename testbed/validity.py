"""Validity guard: is the emulator keeping up, or are we measuring a starved CPU?

Each round carries its run-queue wait (`cpu_wait_ms`, from /proc/<pid>/schedstat);
a round whose wait exceeds 10% of its latency is flagged, and a run with more than
5% flagged rounds is `starved` (the rule: `analysis.schema.cpu_flagged`). The run also
records system CPU pressure (PSI) and each host's TCP counters, so a report can tell loss
recovery from CPU starvation.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# The rule's constants live with the results schema, where the report applies it too.
from analysis.schema import FLAG_WAIT_FRACTION as FLAG_WAIT_FRACTION
from analysis.schema import STARVED_FRACTION, cpu_flagged

TCP_COUNTERS = ("TCPTimeouts", "TCPLossProbes", "RetransSegs")


@dataclass(frozen=True)
class Verdict:
    flagged_rounds: int
    total_rounds: int
    starved: bool

    @property
    def fraction(self) -> float:
        return self.flagged_rounds / self.total_rounds if self.total_rounds else 0.0


def judge_rounds(rounds: pd.DataFrame) -> Verdict:
    """Flag rounds (per rank, stage total, warm-up excluded) whose CPU wait > 10% of latency."""
    if rounds.empty:
        return Verdict(0, 0, False)
    r = rounds[(rounds["stage"] == "total") & ~rounds["is_warmup"]]
    flagged = int(cpu_flagged(r).sum())
    total = len(r)
    return Verdict(flagged, total, total > 0 and flagged > STARVED_FRACTION * total)


def read_cpu_pressure(text: str | None = None) -> dict[str, float]:
    """`some`/`full` avg10 and total (µs) from /proc/pressure/cpu; {} where PSI is off."""
    if text is None:
        try:
            with open("/proc/pressure/cpu") as f:
                text = f.read()
        except OSError:
            return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        for field in fields:
            key, _, value = field.partition("=")
            if key in ("avg10", "total"):
                out[f"{kind}_{key}"] = float(value)
    return out


def parse_tcp_counters(netstat: str, snmp: str) -> dict[str, int]:
    """The TCP counters we report, from /proc/net/netstat (TcpExt) and /proc/net/snmp (Tcp)."""
    values: dict[str, int] = {}
    for text in (netstat, snmp):
        lines = text.splitlines()
        for head, data in zip(lines[::2], lines[1::2], strict=False):
            names, nums = head.split(), data.split()
            if not names or names[0] != nums[0]:
                continue
            for name, num in zip(names[1:], nums[1:], strict=False):
                if name in TCP_COUNTERS:
                    values[name] = int(num)
    return {name: values.get(name, 0) for name in TCP_COUNTERS}


def counter_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in TCP_COUNTERS}
