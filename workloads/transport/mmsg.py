"""Batched UDP syscalls (recvmmsg/sendmmsg via libc) on the endpoint's existing sockets.

A Python-level recv_into/sendto per datagram costs more than the kernel's own work for it on
loopback; one call per batch removes that without changing what goes on the wire: every
datagram is still its own packet (no GSO), so the shallow qdisc counts real packets, and the
caller's pacer still decides which packets may go. All control structures are allocated once.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket

import numpy as np

_libc = ctypes.CDLL(None, use_errno=True)
MSG_DONTWAIT = 0x40
#: Transient send failures: the datagram is dropped (as a lossy network would) and counted unsent.
SEND_TRANSIENT = frozenset(
    (errno.EAGAIN, errno.ECONNREFUSED, errno.ENOBUFS, errno.EHOSTUNREACH, errno.ENETUNREACH)
)


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _MsgHdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.c_void_p),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class _MMsgHdr(ctypes.Structure):
    _fields_ = [("hdr", _MsgHdr), ("len", ctypes.c_uint32)]


class _SockAddrIn(ctypes.Structure):
    _fields_ = [
        ("family", ctypes.c_uint16),
        ("port", ctypes.c_uint16),
        ("addr", ctypes.c_uint32),
        ("zero", ctypes.c_uint8 * 8),
    ]


_recvmmsg = _libc.recvmmsg
_recvmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p]
_recvmmsg.restype = ctypes.c_int
_sendmmsg = _libc.sendmmsg
_sendmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
_sendmmsg.restype = ctypes.c_int
_MSG_BYTES = ctypes.sizeof(_MMsgHdr)


def _len_view(msgs: ctypes.Array) -> np.ndarray:
    """The msg_len field of every mmsghdr, as one strided numpy view (read all at once)."""
    raw = np.frombuffer(msgs, dtype=np.uint8)
    return raw.view(np.uint32)[_MMsgHdr.len.offset // 4 :: _MSG_BYTES // 4]


def source_key(host: str, port: int) -> int:
    """The key `RecvRing.recv` reports for a datagram from (host, port): the first 8 bytes of
    the sockaddr_in the kernel wrote (family, port, address), read as one little-endian int."""
    return (
        socket.AF_INET
        | socket.htons(port) << 16
        | int.from_bytes(socket.inet_aton(host), "little") << 32
    )


class RecvRing:
    """`slots` pre-faulted receive buffers of `slot_bytes` each, filled by one recvmmsg, with
    each datagram's source address (the engine checks it against the job's members)."""

    def __init__(self, slots: int, slot_bytes: int) -> None:
        self.slots = slots
        # Touched now (ones, not zeros) so the kernel never page-faults into it mid-burst.
        self.bufs = np.ones((slots, slot_bytes), dtype=np.uint8)
        self.views = [(self.bufs[k], memoryview(self.bufs[k])) for k in range(slots)]
        self._iov = (_IoVec * slots)()
        self._msgs = (_MMsgHdr * slots)()
        self._names = (_SockAddrIn * slots)()
        for k in range(slots):
            self._iov[k].base = self.bufs[k].ctypes.data
            self._iov[k].len = slot_bytes
            self._msgs[k].hdr.iov = ctypes.addressof(self._iov[k])
            self._msgs[k].hdr.iovlen = 1
            self._msgs[k].hdr.name = ctypes.addressof(self._names[k])
            # Value-result, but an AF_INET socket's sender is always a 16-byte sockaddr_in,
            # so the kernel writes back the same length: set once, not before every call.
            self._msgs[k].hdr.namelen = ctypes.sizeof(_SockAddrIn)
        self._addr = ctypes.addressof(self._msgs)
        self._lens = _len_view(self._msgs)
        # Family, port and address of each slot's sender, as one uint64 (see source_key).
        self._src = np.frombuffer(self._names, dtype=np.uint64)[:: ctypes.sizeof(_SockAddrIn) // 8]

    def recv(self, fd: int) -> tuple[list[int], list[int]] | None:
        """(lengths, source keys) of the datagrams now in slots 0.., ([], []) if none waits;
        None if the call read a queued ICMP error instead (the caller just reads again)."""
        n = self.recv_count(fd)
        if n is None:
            return None
        return self._lens[:n].tolist(), self._src[:n].tolist()

    def recv_count(self, fd: int) -> int | None:
        """How many datagrams one recvmmsg put in slots 0.. (0 if none waits), left in place for
        `lens`/`source` or the compiled path; None if it read a queued ICMP error instead."""
        n = _recvmmsg(fd, self._addr, self.slots, MSG_DONTWAIT, None)
        if n >= 0:
            return n
        e = ctypes.get_errno()
        if e == errno.EAGAIN:
            return 0
        if e in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH):
            return None
        raise OSError(e, f"recvmmsg: {os.strerror(e)}")

    def lens(self) -> np.ndarray:
        """Each slot's datagram length from the last call (a strided view, no copy)."""
        return self._lens

    def source(self) -> np.ndarray:
        """Each slot's source key from the last call (see source_key)."""
        return self._src

    def geometry(self) -> tuple[int, int, int, int, int, int, int]:
        """Where the compiled path reads a batch: slots' base and size, the mmsghdr array's base,
        stride and msg_len offset, the source addresses' base and stride."""
        return (
            self.bufs.ctypes.data, self.bufs.shape[1], self._addr, _MSG_BYTES,
            _MMsgHdr.len.offset, ctypes.addressof(self._names), ctypes.sizeof(_SockAddrIn),
        )  # fmt: skip


class SendBatch:
    """Up to `slots` datagrams (a packed header slot + a payload pointer each) for one socket."""

    def __init__(self, slots: int, header_bytes: int, dests: list[tuple[str, int]]) -> None:
        self.slots = slots
        self.hdrs = np.zeros((slots, header_bytes), dtype=np.uint8)
        self.hviews = [memoryview(self.hdrs[k]) for k in range(slots)]
        self._names = (_SockAddrIn * len(dests))()
        for j, (host, port) in enumerate(dests):
            self._names[j].family = socket.AF_INET
            self._names[j].port = socket.htons(port)
            self._names[j].addr = int.from_bytes(socket.inet_aton(host), "little")
        self._name_addr = [ctypes.addressof(a) for a in self._names]
        self._iov = (_IoVec * (2 * slots))()
        self._msgs = (_MMsgHdr * slots)()
        for k in range(slots):
            self._iov[2 * k].base = self.hdrs[k].ctypes.data
            self._iov[2 * k].len = header_bytes
            m = self._msgs[k].hdr
            m.iov = ctypes.addressof(self._iov[2 * k])
            m.iovlen = 2
            m.namelen = ctypes.sizeof(_SockAddrIn)
        self._addr = ctypes.addressof(self._msgs)
        self.n = 0

    def geometry(self) -> tuple[int, int, int, list[int]]:
        """Where the compiled path stages into this batch: the mmsghdr and iovec arrays, the
        header slots, and each destination's sockaddr."""
        return (self._addr, ctypes.addressof(self._iov), self.hdrs.ctypes.data,
                list(self._name_addr))  # fmt: skip

    def add(self, dest: int, payload_addr: int, nbytes: int) -> memoryview:
        """Queue a datagram to dests[dest]; returns the header slot to pack into."""
        k = self.n
        self.n = k + 1
        self._msgs[k].hdr.name = self._name_addr[dest]
        iov = self._iov[2 * k + 1]
        iov.base = payload_addr
        iov.len = nbytes
        return self.hviews[k]

    def flush(self, fd: int) -> list[bool]:
        """Send every queued datagram, each attempted once; which ones the kernel took."""
        n, start = self.n, 0
        ok = [True] * n
        while start < n:
            sent = _sendmmsg(fd, self._addr + start * _MSG_BYTES, n - start, 0)
            if sent > 0:
                start += sent
                continue
            e = ctypes.get_errno()
            if sent == 0 or e in SEND_TRANSIENT:
                ok[start] = False
                start += 1
                continue
            self.n = 0
            raise OSError(e, f"sendmmsg: {os.strerror(e)}")
        self.n = 0
        return ok
