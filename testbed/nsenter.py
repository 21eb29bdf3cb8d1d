"""Entering a node's network namespace from one thread, to configure it without spawning.

Spawning `sysctl` and one `ethtool` per interface costs ~10 processes per router; writing
/proc/sys and issuing the ethtool ioctl from a thread inside the namespace costs microseconds.
setns(CLONE_NEWNET) moves only the calling thread, so callers run this in worker threads and
the thread always returns to its own namespace (or the error says it could not).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterable, Iterator

from testbed.kernel import KernelError

_CLONE_NEWNET = 0x40000000
_SIOCETHTOOL = 0x8946
_ETHTOOL_GSTRINGS, _ETHTOOL_GSSET_INFO, _ETHTOOL_SFEATURES = 0x1B, 0x37, 0x3B
_ETH_SS_FEATURES = 4
# Kernel feature names per ethtool offload word. TSO is every tx-tcp*-segmentation bit (the
# legacy ETHTOOL_STSO misses newer ones such as tx-tcp-accecn-segmentation).
_OFFLOAD_MATCH = {
    "tso": lambda n: n.startswith("tx-tcp") and n.endswith("segmentation"),
    "gso": lambda n: n == "tx-generic-segmentation",
    "gro": lambda n: n == "rx-gro",
}
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, what: str) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise KernelError(f"setns({what}, CLONE_NEWNET)", err, os.strerror(err))


@contextlib.contextmanager
def in_netns(pid: int) -> Iterator[None]:
    """Run the block with the calling thread inside `pid`'s network namespace."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        try:
            _setns(target, f"/proc/{pid}/ns/net")
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own, "own namespace")
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


def _ioctl(sock: socket.socket, intf: str, buf: ctypes.Array, what: str) -> None:
    ifreq = struct.pack("16sP", intf.encode(), ctypes.addressof(buf))
    ifreq += b"\0" * (40 - len(ifreq))
    try:
        fcntl.ioctl(sock.fileno(), _SIOCETHTOOL, ifreq)
    except OSError as e:
        raise KernelError(what, e.errno or 1, e.strerror or "") from None


def _feature_names(sock: socket.socket, intf: str) -> list[str]:
    """The kernel's feature-bit names (ETH_SS_FEATURES), index = bit."""
    info = ctypes.create_string_buffer(struct.pack("=IIQI", _ETHTOOL_GSSET_INFO, 0,
                                                   1 << _ETH_SS_FEATURES, 0))  # fmt: skip
    _ioctl(sock, intf, info, f"ethtool --show-features {intf} (GSSET_INFO)")
    count = struct.unpack_from("=I", info.raw, 16)[0]
    head = struct.pack("=III", _ETHTOOL_GSTRINGS, _ETH_SS_FEATURES, count)
    strings = ctypes.create_string_buffer(head + bytes(32 * count))
    _ioctl(sock, intf, strings, f"ethtool --show-features {intf} (GSTRINGS)")
    raw = strings.raw[12 : 12 + 32 * count]
    return [raw[i * 32 : (i + 1) * 32].split(b"\0", 1)[0].decode() for i in range(count)]


def offloads_off(intfs: Iterable[str], features: Iterable[str]) -> None:
    """`ethtool -K <intf> tso off gso off gro off` for each interface, by SIOCETHTOOL ioctls."""
    intfs = list(intfs)
    if not intfs:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        names = _feature_names(s, intfs[0])
        bits = [i for i, n in enumerate(names) if any(_OFFLOAD_MATCH[f](n) for f in features)]
        words = (len(names) + 31) // 32
        valid = [0] * words
        for bit in bits:
            valid[bit // 32] |= 1 << (bit % 32)
        blocks = b"".join(struct.pack("=II", v, 0) for v in valid)  # requested = 0: off
        for intf in intfs:
            req = ctypes.create_string_buffer(
                struct.pack("=II", _ETHTOOL_SFEATURES, words) + blocks
            )
            _ioctl(
                sock=s, intf=intf, buf=req, what=f"ethtool -K {intf} {' off '.join(features)} off"
            )
