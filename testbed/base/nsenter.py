"""Configuring a node's network namespace: sysctls from a thread inside it, offloads by ethtool.

Spawning `sysctl` per key costs a process per key; writing /proc/sys from a thread that entered
the namespace costs microseconds. setns(CLONE_NEWNET) moves only the calling thread, so callers
run `in_netns` in worker threads and the thread always returns to its own namespace (or the
error says it could not). `setns` is the one ctypes wrapper for it (os.setns is Python >= 3.12).

Offloads are turned off by the `ethtool -K` command, all of a namespace's interfaces through one
shell started in it, as its `ip`/`tc` batches are (kernel.run_each names a failing interface).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterable, Iterator, Sequence

from testbed.base.kernel import KernelError, run_each

__all__ = ["in_netns", "offload_commands", "offloads_off", "setns", "write_sysctls"]

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd: int, what: str) -> None:
    """Move the calling thread into the namespace open at `fd`; KernelError naming `what`."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise KernelError(f"setns({what}, CLONE_NEWNET)", err, os.strerror(err))


@contextlib.contextmanager
def in_netns(pid: int) -> Iterator[None]:
    """Run the block with the calling thread inside `pid`'s network namespace."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        try:
            setns(target, f"/proc/{pid}/ns/net")
        finally:
            os.close(target)
        try:
            yield
        finally:
            setns(own, "own namespace")
    finally:
        os.close(own)


def write_sysctls(sysctls: Iterable[tuple[str, str]]) -> None:
    """Write `net.*` sysctls of the calling thread's namespace; raise naming the failing key."""
    for key, value in sysctls:
        path = "/proc/sys/" + key.replace(".", "/")
        try:
            with open(path, "w") as f:
                f.write(value)
        except OSError as e:
            raise KernelError(f"sysctl -w {key}={value}", e.errno or 1, e.strerror or "") from None


def offload_commands(intfs: Iterable[str], features: Iterable[str]) -> list[list[str]]:
    """`ethtool -K <intf> tso off gso off gro off` (for features tso, gso, gro) per interface.

    ethtool's `tso` is every tx-tcp*-segmentation feature the kernel has (also newer ones such
    as tx-tcp-accecn-segmentation), `gso` tx-generic-segmentation, `gro` rx-gro."""
    offs = [word for f in features for word in (f, "off")]
    return [["ethtool", "-K", intf, *offs] for intf in intfs]


def offloads_off(
    intfs: Iterable[str], features: Iterable[str], prefix: Sequence[str], timeout: float = 10.0
) -> None:
    """Turn `features` off on every interface, in one shell started by `prefix` (the namespace)."""
    run_each(offload_commands(intfs, features), prefix=prefix, timeout=timeout)
