"""This tool's record of what a live network created, under /run/dblp-testbed/<tag>/.

Append-only line files, written as things are created, so `testbed clean` can find the
leftovers of a run that died hard (SIGKILL, power loss of the Python process):

    owner   "<pid> <starttime>"              the Python process that owns the network
    nodes   "<name> <pid> <starttime> <netns inode> <netns cookie>"   one line per node shell
    procs   "<pid> <starttime> <what>"       processes registered with the network
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/run/dblp-testbed")
PREFIX = "dblp"  # names this tool gives to root-namespace objects (probe netns, ...)


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


_CLONE_NEWNET = 0x40000000
_SO_NETNS_COOKIE = 71  # Linux >= 5.14
_libc = ctypes.CDLL(None, use_errno=True)


def netns_cookie(pid: int) -> int | None:
    """The kernel's never-reused 64-bit id of `pid`'s network namespace (None if unknown).

    Inode numbers of dead namespaces are reused; the cookie is not, so it proves that a
    namespace found later is the one we created. Read from a socket opened inside the
    namespace by a short-lived thread (setns affects only the calling thread).
    """
    out: list[int] = []

    def work() -> None:
        try:
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        except OSError:
            return
        try:
            if _libc.setns(target, _CLONE_NEWNET) != 0:
                return
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    raw = s.getsockopt(socket.SOL_SOCKET, _SO_NETNS_COOKIE, 8)
                out.append(struct.unpack("=Q", raw)[0])
            except OSError:
                pass
            finally:
                _libc.setns(own, _CLONE_NEWNET)
        finally:
            os.close(own)
            os.close(target)

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
        tag = tag or f"net-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        path = ROOT / tag
        path.mkdir(parents=True, exist_ok=False)
        me = os.getpid()
        (path / "owner").write_text(f"{me} {start_time(me)}\n")
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

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text().splitlines() if ln.strip()]
    except OSError:
        return []


def all_state_dirs() -> list[StateDir]:
    if not ROOT.is_dir():
        return []
    return [StateDir(p) for p in sorted(ROOT.iterdir()) if p.is_dir()]


def pids_in_netns(inodes: set[int]) -> list[int]:
    """Every process whose network namespace is one of `inodes` (ours, by construction)."""
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me and netns_inode(int(entry)) in inodes:
            out.append(int(entry))
    return out
