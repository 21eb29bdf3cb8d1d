"""`testbed clean`: remove the leftovers of crashed runs of *this tool only*.

What counts as ours, and nothing else:
- state dirs under /run/dblp-testbed/ whose owner process is gone (a live run is left alone),
  and ones whose creation or removal was cut short (see `StateDir.create` and `.remove`);
- in them, recorded processes still alive with the recorded start time (not a reused pid), and
  every process in a recorded namespace that `StateDir.ours` proves is ours: a verified
  process is in it, or a process in it shows the recorded netns cookie (never reused, unlike
  the inode). Teardown of a live network makes the same check.
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

from testbed.base.statedir import (
    PREFIX,
    StateDir,
    abandoned,
    all_state_dirs,
    netns_inode,
    pids_in_netns,
    start_time,
)
from testbed.network.live import kill_namespaces

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
        elif sd.owner() is not None or sd.path.exists():  # not just removed by its owner
            _clean_state_dir(sd, report, dry_run)
    for path in abandoned():  # a creation or removal cut short
        _clean_state_dir(StateDir(path), report, dry_run)
    for name in _named_netns():
        m = _PROBE_NS.match(name)
        if m and start_time(int(m.group(1))) is None:
            report.netns.append(name)
            if not dry_run:
                subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
    return report


def _clean_state_dir(sd: StateDir, report: CleanReport, dry_run: bool) -> None:
    report.state_dirs.append(str(sd.path))
    ours = sd.ours()  # before any kill: a killed process no longer shows its namespace
    inside = pids_in_netns(set(ours.netns))
    report.killed += [*ours.live, *(pid for pid in inside if pid not in ours.live)]
    others = {n.netns for n in sd.nodes()} - ours.netns
    report.unverified_netns += len({netns_inode(pid) for pid in pids_in_netns(others)} & others)
    if dry_run:
        return
    for pid in ours.live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    kill_namespaces(set(ours.netns))
    sd.remove()


def _named_netns() -> list[str]:
    p = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return [ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()]
