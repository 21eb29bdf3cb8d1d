"""One rank's UDP sockets: k source ports, forced buffers, no fragmentation, poll-based waits.

Ports are fixed by rank (base + rank*k + i, i < k) so peers need only each other's addresses;
socket i sends to the peer's socket i, so the k (src port, dst port) pairs give ECMP k flows to
hash per peer. Receives go into preallocated, pre-faulted slots (a lazily mapped array loses
datagrams to first-touch page faults, MACHINE-NOTES "Python UDP"), filled by one recvmmsg; data
goes out through one sendmmsg per socket per pacer batch.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import socket
from collections.abc import Sequence

from workloads.transport.config import TransportConfig
from workloads.transport.mmsg import RecvRing, SendBatch
from workloads.transport.wire import IP_UDP_BYTES, body_offset

log = logging.getLogger(__name__)

# Linux values; the socket module does not export these.
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
RECV_SLOTS = 64  # datagrams per recvmmsg
SEND_SLOTS = 64  # datagrams per sendmmsg (at most the engine's send batch)


def port_of(config: TransportConfig, rank: int, i: int) -> int:
    return config.base_port + rank * config.ports_per_peer + i


def _force_buffer(sock: socket.socket, force_opt: int, plain_opt: int, size: int) -> int:
    """Set a socket buffer past rmem_max/wmem_max when we may (root); return the effective size.

    Without CAP_NET_ADMIN the FORCE option fails with EPERM and the plain option is used, which
    the kernel clamps to the sysctl maximum; the caller logs what it got.
    """
    try:
        sock.setsockopt(socket.SOL_SOCKET, force_opt, size)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, plain_opt, size)
    # The kernel reports double the requested value (its bookkeeping overhead).
    return sock.getsockopt(socket.SOL_SOCKET, plain_opt) // 2


class Endpoint:
    """k bound non-blocking UDP sockets plus a wake-up eventfd, all in one poll set."""

    def __init__(self, rank: int, addrs: Sequence[str], config: TransportConfig) -> None:
        self.rank = rank
        self.world = len(addrs)
        self.k = config.ports_per_peer
        self.socks: list[socket.socket] = []
        self.dest = [
            [(addrs[p], port_of(config, p, i)) for i in range(self.k)] for p in range(self.world)
        ]
        rcv, snd = [], []
        try:
            for i in range(self.k):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.socks.append(s)
                s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
                rcv.append(
                    _force_buffer(s, SO_RCVBUFFORCE, socket.SO_RCVBUF, config.sock_buf_bytes)
                )
                snd.append(
                    _force_buffer(s, SO_SNDBUFFORCE, socket.SO_SNDBUF, config.sock_buf_bytes)
                )
                addr = (addrs[rank], port_of(config, rank, i))
                try:
                    s.bind(addr)
                except OSError as e:
                    raise OSError(
                        e.errno, f"cannot bind UDP {addr[0]}:{addr[1]}: {e.strerror}"
                    ) from e
                s.setblocking(False)
        except BaseException:
            self.close()
            raise
        self.rcvbuf_bytes = min(rcv)
        self.sndbuf_bytes = min(snd)
        log.info(
            "rank %d: %d UDP sockets, SO_RCVBUF %d, SO_SNDBUF %d bytes",
            rank,
            self.k,
            self.rcvbuf_bytes,
            self.sndbuf_bytes,
        )
        if self.rcvbuf_bytes < config.sock_buf_bytes:
            log.warning(
                "rank %d: SO_RCVBUF is %d bytes, asked %d (not root?)",
                rank,
                self.rcvbuf_bytes,
                config.sock_buf_bytes,
            )
        self.wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.poller = select.poll()
        for s in self.socks:
            self.poller.register(s.fileno(), select.POLLIN)
        self.poller.register(self.wake_fd, select.POLLIN)
        self.fd_index = {s.fileno(): i for i, s in enumerate(self.socks)}
        # Receive slots for one recvmmsg; one send batch per socket (a socket's peers differ).
        self.ring = RecvRing(RECV_SLOTS, config.mtu - IP_UDP_BYTES + 64)
        self.batches = [
            SendBatch(
                SEND_SLOTS,
                body_offset(config.integrity == "mac"),  # the header, and the MAC's room
                [self.dest[p][i] for p in range(self.world)],
            )
            for i in range(self.k)
        ]

    @staticmethod
    def poll_ms(timeout_s: float) -> int:
        """poll's timeout for a wish of timeout_s: whole milliseconds, rounded up."""
        return max(0, int(timeout_s * 1000 + 0.999))

    def wait(self, timeout_s: float | None) -> list[int]:
        """Block until a socket is readable or the eventfd fires; return ready socket indices."""
        ms = None if timeout_s is None else self.poll_ms(timeout_s)
        ready = []
        for fd, _ev in self.poller.poll(ms):
            if fd == self.wake_fd:
                with contextlib.suppress(BlockingIOError):
                    os.eventfd_read(self.wake_fd)
            else:
                ready.append(self.fd_index[fd])
        return ready

    def watch(self, fd: int, index: int) -> None:
        """Also wait on `fd` (a control link), reported by `wait` as `index` (>= k)."""
        self.poller.register(fd, select.POLLIN)
        self.fd_index[fd] = index

    def unwatch(self, fd: int) -> None:
        self.poller.unregister(fd)
        self.fd_index.pop(fd, None)

    def wake(self) -> None:
        os.eventfd_write(self.wake_fd, 1)

    def send(self, i: int, peer: int, view: memoryview) -> bool:
        """Send one datagram from socket i to the peer's socket i; False if the kernel refused."""
        try:
            self.socks[i].sendto(view, self.dest[peer][i])
            return True
        except (BlockingIOError, ConnectionRefusedError):
            return False
        except OSError as e:
            # Transient: a full device queue or a route briefly gone. EMSGSIZE is a bug: raise.
            if e.errno in (errno.ENOBUFS, errno.EHOSTUNREACH, errno.ENETUNREACH):
                return False
            raise

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks = []
        fd = getattr(self, "wake_fd", None)
        if fd is not None:
            os.close(fd)
            self.wake_fd = None
