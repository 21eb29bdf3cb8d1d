"""`testbed clean`: remove the leftovers of crashed runs of *this tool only*.

What counts as ours, and nothing else:
- state dirs under /run/dblp-testbed/ whose owner process is gone (a live run is left alone);
- in them, recorded processes still alive with the recorded start time (not a reused pid), and
  every process in a recorded namespace whose netns cookie (never reused, unlike its inode)
  matches the record, or, on kernels without cookies, that a verified process shows is ours;
- named namespaces `dblp-*-<pid>` (capability probes) whose creating pid is gone.
Our veths are born inside node namespaces and die with them; none is ever in the root namespace.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from dataclasses import dataclass, field

from testbed.network import kill_namespaces
from testbed.statedir import (
    PREFIX,
    StateDir,
    alive,
    all_state_dirs,
    netns_cookie,
    netns_inode,
    pids_in_netns,
    start_time,
)

_PROBE_NS = re.compile(rf"^{PREFIX}-[a-z]+-(\d+)$")


@dataclass
class CleanReport:
    state_dirs: list[str] = field(default_factory=list)
    live_runs: list[str] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    netns: list[str] = field(default_factory=list)
    unverified_netns: int = 0  # recorded namespaces still populated but not provably ours

    def to_dict(self) -> dict[str, object]:
        return self.__dict__.copy()


def clean(dry_run: bool = False) -> CleanReport:
    report = CleanReport()
    for sd in all_state_dirs():
        if sd.owner_alive():
            report.live_runs.append(str(sd.path))
            continue
        _clean_state_dir(sd, report, dry_run)
    for name in _named_netns():
        m = _PROBE_NS.match(name)
        if m and start_time(int(m.group(1))) is None:
            report.netns.append(name)
            if not dry_run:
                subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
    return report


def _clean_state_dir(sd: StateDir, report: CleanReport, dry_run: bool) -> None:
    report.state_dirs.append(str(sd.path))
    verified: set[int] = set()
    recorded_ns = {n.netns for n in sd.nodes()}
    procs = [(n.pid, n.started) for n in sd.nodes()] + [(p.pid, p.started) for p in sd.procs()]
    for pid, started in procs:
        if alive(pid, started):
            ns = netns_inode(pid)
            if ns in recorded_ns:
                verified.add(ns)
            report.killed.append(pid)
            if not dry_run:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    for node in sd.nodes():
        if node.cookie is None or node.netns in verified:
            continue
        inside = pids_in_netns({node.netns})
        if inside and netns_cookie(inside[0]) == node.cookie:
            verified.add(node.netns)
            report.killed += inside
    report.unverified_netns += len({n.netns for n in sd.nodes() if pids_in_netns({n.netns})}
                                   - verified)  # fmt: skip
    if not dry_run:
        kill_namespaces(verified)
        sd.remove()


def _named_netns() -> list[str]:
    p = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return [ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()]
