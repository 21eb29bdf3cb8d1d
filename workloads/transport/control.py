"""The TCP control channel of `--control tcp` (the paper's rule): one connection per peer pair,
set up beside the UDP sockets, carrying PROBE, NACK (the receiver's bitmap of what is missing)
and STOP; data stays UDP. TCP delivers them, so no control message is lost with the data.

A frame is a 2-byte little-endian length and one wire.py datagram (header and payload), which
the engine decodes and checks exactly as it does a UDP datagram; a frame's sender must also be
the peer its connection was opened with. The connection is set up at rendezvous: rank i listens
on TCP port base + i*k (the port of its first UDP socket), connects to every higher rank, and
accepts every lower one; each side first sends a hello (the job token and its rank), so a
stray client that reaches the port is refused.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import time
from collections.abc import Sequence

from workloads.transport.config import TransportConfig
from workloads.transport.endpoint import port_of

HELLO = struct.Struct("<QH")  # job token, rank
LENGTH = struct.Struct("<H")
SETUP_TIMEOUT_S = 60.0
SEND_TIMEOUT_S = 5.0  # a control frame is tiny: this long blocked means the peer is stuck
RETRY_S = 0.05


class ControlLinks:
    """One rank's TCP connections to every peer, by peer rank."""

    def __init__(
        self,
        rank: int,
        addrs: Sequence[str],
        config: TransportConfig,
        job_token: int,
        timeout_s: float = SETUP_TIMEOUT_S,
    ) -> None:
        self.rank, self.world, self.addr = rank, len(addrs), addrs[rank]
        self.socks: dict[int, socket.socket] = {}
        self.bufs: dict[int, bytearray] = {}
        deadline = time.monotonic() + timeout_s
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((addrs[rank], port_of(config, rank, 0)))
            listener.listen(self.world)
            for peer in range(rank + 1, self.world):
                self._connect(peer, (addrs[peer], port_of(config, peer, 0)), job_token, deadline)
            while len(self.socks) < self.world - 1:
                self._accept(listener, addrs, job_token, deadline)
        except BaseException:
            self.close()
            raise
        finally:
            listener.close()
        for s in self.socks.values():
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(SEND_TIMEOUT_S)
            self.bufs[self.peer_of(s)] = bytearray()
        self.fd_peer = {s.fileno(): p for p, s in self.socks.items()}

    def peer_of(self, sock: socket.socket) -> int:
        return next(p for p, s in self.socks.items() if s is sock)

    def _connect(self, peer: int, addr: tuple[str, int], token: int, deadline: float) -> None:
        while True:  # the peer may not be listening yet
            try:
                s = socket.create_connection(
                    addr, max(0.1, deadline - time.monotonic()), (self.addr, 0)
                )
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(RETRY_S)
                continue
            try:
                s.sendall(HELLO.pack(token, self.rank))
            except OSError:
                s.close()
                raise
            self.socks[peer] = s
            return

    def _accept(
        self, listener: socket.socket, addrs: Sequence[str], token: int, deadline: float
    ) -> None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([listener], [], [], left)[0]:
            raise TimeoutError(
                f"rank {self.rank}: control connections from lower ranks missing after setup"
            )
        s, (host, _port) = listener.accept()
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            hello = _read_exactly(s, HELLO.size)
            their_token, peer = HELLO.unpack(hello)
        except OSError:
            s.close()
            return
        if their_token != token or not 0 <= peer < self.rank or addrs[peer] != host:
            s.close()  # not a member of this job, or not from the address it claims
            return
        if peer in self.socks:
            s.close()
            return
        self.socks[peer] = s

    def send(self, peer: int, datagram: bytes) -> bool:
        """Send one frame; False if the connection is gone."""
        try:
            self.socks[peer].sendall(LENGTH.pack(len(datagram)) + datagram)
            return True
        except OSError:
            return False

    def recv(self, peer: int) -> list[bytes] | None:
        """The whole frames that arrived from `peer` (call when its socket is readable);
        None once the peer closed the connection."""
        s, buf = self.socks[peer], self.bufs[peer]
        try:
            chunk = s.recv(1 << 16)
        except (BlockingIOError, TimeoutError):
            return []
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
        frames, pos = [], 0
        while len(buf) - pos >= LENGTH.size:
            (n,) = LENGTH.unpack_from(buf, pos)
            if len(buf) - pos - LENGTH.size < n:
                break
            frames.append(bytes(buf[pos + LENGTH.size : pos + LENGTH.size + n]))
            pos += LENGTH.size + n
        del buf[:pos]
        return frames

    def close(self) -> None:
        for s in self.socks.values():
            with contextlib.suppress(OSError):
                s.close()
        self.socks = {}


def _read_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed during hello")
        out += chunk
    return out
