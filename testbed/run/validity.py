"""What a run records to be interpreted, and distrusted, later: system CPU pressure (PSI) and
each host's TCP counters, so a report can tell loss recovery from a busy machine. Whether the
CPU distorted the timing is the fidelity verdict's business (analysis/fidelity.py).
"""

from __future__ import annotations

TCP_COUNTERS = ("TCPTimeouts", "TCPLossProbes", "RetransSegs")


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
