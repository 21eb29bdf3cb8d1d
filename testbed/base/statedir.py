"""This tool's record of what a live network created, under /run/dblp-testbed/<tag>/.

Append-only line files, written as things are created, so `testbed clean` can find the
leftovers of a run that died hard (SIGKILL, power loss of the Python process):

    owner   "<pid> <starttime>"              the Python process that owns the network
    nodes   "<name> <pid> <starttime> <netns inode> <netns cookie>"   one line per node shell
    procs   "<pid> <starttime> <what>"       processes registered with the network

A state dir appears under its final name only with its owner file already in it (it is made
as `.new-<pid>-<starttime>-<tag>` and renamed), and leaves it whole (renamed to `.old-...`,
then deleted), so `testbed clean`, which removes state dirs whose owner is gone, can never
take a run that is starting or ending for a crashed one.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from testbed.base.kernel import KernelError
from testbed.base.nsenter import in_netns

ROOT = Path("/run/dblp-testbed")
PREFIX = "dblp"  # names this tool gives to root-namespace objects (probe netns, ...)
INCOMING = ".new-"  # a state dir being created: "<INCOMING><pid>-<starttime>-<tag>"
OUTGOING = ".old-"  # a state dir being removed, named the same way after its remover


def start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot (field 22 of /proc/PID/stat); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def netns_inode(pid: int) -> int | None:
    try:
        link = os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    return int(link[link.index("[") + 1 : -1])


_SO_NETNS_COOKIE = 71  # Linux >= 5.14


def netns_cookie(pid: int) -> int | None:
    """The kernel's never-reused 64-bit id of `pid`'s network namespace (None if unknown).

    Inode numbers of dead namespaces are reused; the cookie is not, so it proves that a
    namespace found later is the one we created. Read from a socket opened inside the
    namespace by a short-lived thread (setns affects only the calling thread).
    """
    out: list[int] = []

    def work() -> None:
        try:
            with in_netns(pid), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                raw = s.getsockopt(socket.SOL_SOCKET, _SO_NETNS_COOKIE, 8)
            out.append(struct.unpack("=Q", raw)[0])
        except (OSError, KernelError):  # gone, not enterable, or no cookie on this kernel
            pass

    t = threading.Thread(target=work, name=f"netns-cookie-{pid}")
    t.start()
    t.join(timeout=5.0)
    return out[0] if out else None


def alive(pid: int, started: int) -> bool:
    """True if `pid` is still the process that started at `started` (not a reused pid)."""
    return start_time(pid) == started


@dataclass(frozen=True)
class NodeRecord:
    name: str
    pid: int
    started: int
    netns: int
    cookie: int | None


@dataclass(frozen=True)
class ProcRecord:
    pid: int
    started: int
    what: str


class StateDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, tag: str | None = None) -> StateDir:
        """A new state dir owned by this process; it never exists without its owner file.

        It is filled under a name `testbed clean` only removes once its creator (pid and start
        time, in the name) is gone, then renamed into place: rename is atomic, so a clean
        running at the same time sees no dir or one whose owner is this live process.
        """
        tag = tag or f"net-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        path = ROOT / tag
        ROOT.mkdir(parents=True, exist_ok=True)
        if path.exists():
            raise FileExistsError(errno.EEXIST, "state dir exists", str(path))
        incoming = ROOT / f"{INCOMING}{_me()}-{tag}"
        incoming.mkdir()
        try:
            with open(incoming / "owner", "w") as f:
                f.write(_me().replace("-", " ") + "\n")
            os.rename(incoming, path)  # an empty dir at `path` is replaced; a filled one is not
        except OSError as e:
            shutil.rmtree(incoming, ignore_errors=True)
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(errno.EEXIST, "state dir exists", str(path)) from e
            raise
        except BaseException:
            shutil.rmtree(incoming, ignore_errors=True)
            raise
        return cls(path)

    def _append(self, file: str, line: str) -> None:
        with open(self.path / file, "a") as f:
            f.write(line + "\n")

    def add_node(self, name: str, pid: int) -> None:
        self._append(
            "nodes", f"{name} {pid} {start_time(pid)} {netns_inode(pid)} {netns_cookie(pid)}"
        )

    def add_proc(self, pid: int, what: str) -> None:
        self._append("procs", f"{pid} {start_time(pid)} {' '.join(what.split())}")

    def owner(self) -> tuple[int, int] | None:
        try:
            pid, started = (self.path / "owner").read_text().split()
            return int(pid), int(started)
        except (OSError, ValueError):
            return None

    def nodes(self) -> list[NodeRecord]:
        out = []
        for line in _lines(self.path / "nodes"):
            name, pid, started, ns, cookie = line.split()
            if started != "None" and ns != "None":
                ck = None if cookie == "None" else int(cookie)
                out.append(NodeRecord(name, int(pid), int(started), int(ns), ck))
        return out

    def procs(self) -> list[ProcRecord]:
        out = []
        for line in _lines(self.path / "procs"):
            pid, started, *what = line.split()
            if started != "None":
                out.append(ProcRecord(int(pid), int(started), " ".join(what)))
        return out

    def owner_alive(self) -> bool:
        own = self.owner()
        return own is not None and alive(*own)

    def ours(self) -> Ours:
        """Which recorded processes and namespaces are provably still ours: the one check that
        both teardown and `testbed clean` use before killing anything (`start_time_check`).

        A namespace a recorded process no longer proves is still ours if a process inside it
        shows the recorded netns cookie (never reused, unlike the inode)."""
        nodes = self.nodes()
        records = [(n.pid, n.started) for n in nodes] + [(p.pid, p.started) for p in self.procs()]
        recorded = {n.netns for n in nodes}
        # netns before start time: if the start time still matches afterwards, the pid was the
        # same process when its namespace was read
        seen = {pid: (netns_inode(pid), start_time(pid)) for pid, _ in records}
        ours = start_time_check(records, recorded, seen)
        proven = set(ours.netns)
        for node in nodes:
            if node.cookie is None or node.netns in proven:
                continue
            inside = pids_in_netns({node.netns})
            if inside and netns_cookie(inside[0]) == node.cookie:
                proven.add(node.netns)
        return Ours(ours.live, frozenset(proven))

    def remove(self) -> None:
        """Leave the final name at once (a rename), then delete: a clean never sees it half gone."""
        outgoing = self.path.with_name(f"{OUTGOING}{_me()}-{self.path.name}")
        try:
            os.rename(self.path, outgoing)
        except OSError:
            outgoing = self.path  # gone already, or not renamable: delete in place
        shutil.rmtree(outgoing, ignore_errors=True)


def _lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text().splitlines() if ln.strip()]
    except OSError:
        return []


@dataclass(frozen=True)
class Ours:
    live: tuple[int, ...]  # recorded processes still running (same pid, same start time)
    netns: frozenset[int]  # recorded namespaces proven to be the ones we created


def start_time_check(
    records: Iterable[tuple[int, int]],
    recorded_netns: set[int],
    seen: Mapping[int, tuple[int | None, int | None]],
) -> Ours:
    """The start-time check, pure: `records` are recorded (pid, start time); `seen` maps a pid
    to (netns inode, start time) as /proc shows them now (None: gone or unreadable).

    A pid is ours only while it has its recorded start time (pids are reused), and a recorded
    namespace inode only while such a process is in it (inodes of dead namespaces are reused).
    """
    live: dict[int, None] = {}
    netns = set()
    for pid, started in records:
        ns, now = seen.get(pid, (None, None))
        if now is None or now != started:
            continue
        live[pid] = None
        if ns in recorded_netns:
            netns.add(ns)
    return Ours(tuple(live), frozenset(netns))


def _me() -> str:
    """This process as `<pid>-<starttime>`: who is creating or removing a state dir."""
    return f"{os.getpid()}-{start_time(os.getpid())}"


def _in_transit(p: Path) -> bool:
    return p.name.startswith((INCOMING, OUTGOING))


def all_state_dirs() -> list[StateDir]:
    """Every state dir under its final name (ones being created or removed are not listed)."""
    if not ROOT.is_dir():
        return []
    return [StateDir(p) for p in sorted(ROOT.iterdir()) if p.is_dir() and not _in_transit(p)]


def abandoned() -> list[Path]:
    """State dirs whose creation or removal never finished: the process doing it (pid and start
    time, in the dir's name) is gone, so nobody will. Being created, they hold only an owner
    file; being removed, what a dead run left (`testbed clean` already had it, or its owner
    was dying). One whose creator/remover is alive, or whose name does not parse, is not listed."""
    if not ROOT.is_dir():
        return []
    out = []
    for p in sorted(ROOT.iterdir()):
        if not (p.is_dir() and _in_transit(p)):
            continue
        _, pid, started, *_tag = [*p.name.split("-", 3), "", ""]  # .new-<pid>-<start>-<tag>
        if pid.isdigit() and started.isdigit() and not alive(int(pid), int(started)):
            out.append(p)
    return out


def pids_in_netns(inodes: set[int]) -> list[int]:
    """Every process whose network namespace is one of `inodes` (ours, by construction)."""
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me and netns_inode(int(entry)) in inodes:
            out.append(int(entry))
    return out
