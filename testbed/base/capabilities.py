"""What this kernel and machine can emulate, probed once in a throw-away namespace.

Every qdisc/classifier is tried for real on a veth pair inside `dblp-probe-<pid>`; the namespace
(and so everything created in it) is deleted afterwards. Nothing is assumed from module lists:
a run uses only what the probe saw work, and never claims netem it did not have.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass

from testbed.base.statedir import PREFIX

PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Capabilities:
    netem: bool
    htb: bool
    tbf: bool
    pfifo: bool
    bfifo: bool
    clsact: bool
    ifb: bool
    nft_numgen: bool
    iptables_statistic: bool
    root: bool
    mnexec: bool
    iperf3: bool
    torch: bool
    kernel: str

    def to_dict(self) -> dict[str, bool | str]:
        return asdict(self)


def _ok(argv: list[str], input_text: str | None = None) -> bool:
    try:
        p = subprocess.run(
            argv, input=input_text, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


_NFT_PROBE = """
table inet dblp_probe {
  chain out {
    type filter hook output priority 0; policy accept;
    numgen random mod 100 < 1 counter drop
  }
}
"""


@functools.cache
def probe() -> Capabilities:
    """Probe once per process (a few dozen ms of subprocesses)."""
    root = os.geteuid() == 0
    kernel_caps = dict.fromkeys(
        ("netem", "htb", "tbf", "pfifo", "bfifo", "clsact", "ifb", "nft_numgen",
         "iptables_statistic"), False)  # fmt: skip
    if root and shutil.which("ip") and shutil.which("tc"):
        kernel_caps = _probe_kernel()
    return Capabilities(
        **kernel_caps,
        root=root,
        mnexec=shutil.which("mnexec") is not None,
        iperf3=shutil.which("iperf3") is not None,
        torch=importlib.util.find_spec("torch") is not None,
        kernel=os.uname().release,
    )


def _probe_kernel() -> dict[str, bool]:
    ns = f"{PREFIX}-probe-{os.getpid()}"
    if not _ok(["ip", "netns", "add", ns]):
        raise RuntimeError(f"capability probe: `ip netns add {ns}` failed (are you root?)")
    try:
        nsx = ["ip", "netns", "exec", ns]
        up = _ok(["ip", "-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1"])
        up = up and _ok(["ip", "-n", ns, "link", "set", "p0", "up"])
        if not up:
            raise RuntimeError(f"capability probe: cannot create a veth pair in netns {ns}")

        def qdisc(*spec: str, parent: tuple[str, ...] = ("root",)) -> bool:
            works = _ok(["tc", "-n", ns, "qdisc", "add", "dev", "p0", *parent, *spec])
            _ok(["tc", "-n", ns, "qdisc", "del", "dev", "p0", *parent])
            return works

        iptables = shutil.which("iptables-legacy") or shutil.which("iptables")
        return {
            "htb": qdisc("handle", "1:", "htb", "default", "1"),
            "tbf": qdisc("tbf", "rate", "1mbit", "burst", "32kbit", "latency", "50ms"),
            "pfifo": qdisc("pfifo", "limit", "20"),
            "bfifo": qdisc("bfifo", "limit", "30000"),
            "netem": qdisc("netem", "loss", "1%"),
            "clsact": qdisc("clsact", parent=()),
            "ifb": _ok(["ip", "-n", ns, "link", "add", "ifb0", "type", "ifb"]),
            "nft_numgen": shutil.which("nft") is not None
            and _ok([*nsx, "nft", "-f", "-"], input_text=_NFT_PROBE),
            "iptables_statistic": iptables is not None
            and _ok(
                [
                    *nsx,
                    iptables,
                    "-A",
                    "OUTPUT",
                    "-o",
                    "p0",
                    "-m",
                    "statistic",
                    "--mode",
                    "random",
                    "--probability",
                    "0.01",
                    "-j",
                    "DROP",
                ]
            ),  # fmt: skip
        }
    finally:
        _ok(["ip", "netns", "del", ns])
