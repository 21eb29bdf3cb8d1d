"""The parameter-server collective (`--collective ps`): N workers and one server, the paper's
setup (3 workers + 1 server: a centralised reduce, then a broadcast).

It is the transpose all-reduce with uneven ownership (layout.py, `owner`): the server, the
transport's last rank N, owns the whole bucket and the workers own nothing. Stage 1 (scatter)
is then every worker sending its bucket to the server, which reduces; stage 2 (gather) is the
server sending the result to every worker. So every completion policy (ε, stop early or idle,
repairs, control over TCP or UDP), the pacer and the compiled receive path serve it unchanged;
what differs is the pacing bound and the hooks' N (the workers; the server adds zeros and is
not counted in the mean).

The server is a process of its own (`python -m workloads.ps_server`) outside DDP's process
group, which stays the N workers. It joins the transport's group of N + 1 through the job's
rendezvous store: a Gloo group under its own key prefix, over whose connections (never through
the store) rank 0 hands out the job token. Before each round worker 0 tells the server what it
needs to mirror the round (size, ε and its id, reliable, injected loss, t_max and p50): the
server has no gradients, no phase controller and no DDP buckets of its own. That announcement
goes over a TCP connection of its own to the server's first transport port, inside the port
range a round-aligned loss event spares with the control links (`spare_control`): Gloo's
connections sit on ephemeral ports, and a 90% loss event on them stalled the next
announcement for tens of seconds (TCP's backed-off retransmissions), so every hit round ran
into its cap.

    ps = ParameterServer.from_process_group(addr, "dblp", config)   # a worker, after DDP's init
    ps = ParameterServer.join_as_server(addr, "dblp", config, master, port, workers=3)
    while (a := ps.next_round()) is not None:
        ps.serve(a)
"""

from __future__ import annotations

import contextlib
import math
import pickle
import socket
import struct
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from workloads.transport import wire
from workloads.transport.config import TransportConfig
from workloads.transport.control import HELLO, SEND_TIMEOUT_S, _read_exactly
from workloads.transport.endpoint import port_of
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.stats import RoundStats
from workloads.transport.tar import TransposeAllReduce

COLLECTIVES = ("tar", "ps")
#: Key prefix of the transport's own Gloo group in the job's rendezvous store.
STORE_PREFIX = "ps-transport/"
#: Bound on the transport group's operations, × the dilation: the server waits this long for
#: the next round (a worker's evaluation or checkpoint lies between two steps' rounds).
GROUP_TIMEOUT_S = 900.0
_FRAME = struct.Struct("<7d")  # n, epsilon, eps_id, reliable, inject, t_max_ms, p50_ms


@dataclass(frozen=True)
class Announce:
    """What worker 0 tells the server before a round, so that it mirrors it."""

    n: int
    epsilon: float
    eps_id: int
    reliable: bool
    inject: bool
    t_max_ms: float | None
    p50_ms: float | None

    def frame(self) -> bytes:
        t_max = math.nan if self.t_max_ms is None else self.t_max_ms
        p50 = math.nan if self.p50_ms is None else self.p50_ms
        vals = (self.n, self.epsilon, self.eps_id, self.reliable, self.inject, t_max, p50)
        return _FRAME.pack(*(float(v) for v in vals))

    @classmethod
    def of(cls, frame: bytes) -> Announce | None:
        """The announcement in `frame`; None for the last one (n < 0: the workers are done)."""
        n, eps, eps_id, rel, inj, t_max, p50 = _FRAME.unpack(frame)
        if n < 0:
            return None
        opt = lambda v: None if math.isnan(v) else v  # noqa: E731
        return cls(int(n), eps, int(eps_id), bool(rel), bool(inj), opt(t_max), opt(p50))


#: The last announcement: the workers are done, the server stops.
DONE = _FRAME.pack(-1.0, *[0.0] * (_FRAME.size // 8 - 1))


def base_store(store: Any) -> Any:
    """The store under a process group's prefixes: the one the server reaches as a client."""
    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    return store


def transport_group(store: Any, rank: int, size: int, timeout_s: float, name: str = "") -> Any:
    """The transport's Gloo group of N + 1 (it honours GLOO_SOCKET_IFNAME, as DDP's does)."""
    prefixed = dist.PrefixStore(f"{STORE_PREFIX}{name}/", base_store(store))
    return dist.ProcessGroupGloo(prefixed, rank, size, timedelta(seconds=timeout_s))


def allgather_objects(group: Any, size: int, obj: Any) -> list[Any]:
    """Every member's `obj` (pickled, over the group's connections): the raw group has no
    `all_gather_object`."""
    blob = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    n = torch.tensor([blob.size], dtype=torch.int64)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    group.allgather([sizes], [n]).wait()
    longest = max(int(s) for s in sizes)
    mine = torch.zeros(longest, dtype=torch.uint8)
    mine[: blob.size] = torch.from_numpy(blob.copy())
    every = [torch.zeros(longest, dtype=torch.uint8) for _ in range(size)]
    group.allgather([every], [mine]).wait()
    return [pickle.loads(e[: int(s)].numpy().tobytes()) for e, s in zip(every, sizes, strict=True)]


class ParameterServer(TransposeAllReduce):
    """One member of the parameter-server collective: a worker (ranks 0..N-1) or the server
    (rank N). Workers call `allreduce` as on the transpose; the server calls `serve`."""

    def __init__(
        self,
        rank: int,
        world: int,
        addrs: list[str],
        policy: str,
        config: TransportConfig | None = None,
        *,
        job_token: int,
        group: Any = None,
    ) -> None:
        if world < 3:
            raise ValueError(f"a parameter server needs at least 2 workers, got {world - 1}")
        self.owner = world - 1
        super().__init__(rank, world, addrs, policy, config, job_token=job_token)
        self.group = group
        self.addrs, self.job_token = list(addrs), job_token
        self._listener: socket.socket | None = None  # the server's, until worker 0 connects
        self._link: socket.socket | None = None  # worker 0 -> server: the announcements

    @property
    def server(self) -> int:
        return self.world - 1

    def bound_ms(self, n_elems: int) -> float:
        """2 N S / B: the server's link carries N buckets in, then N out (S in wire bytes)."""
        per = wire.elems_per_packet(self.config.mtu)
        wire_bytes = n_elems * 4 + -(-n_elems // per) * (wire.HEADER_BYTES + WIRE_OVERHEAD)
        return 2 * (self.world - 1) * wire_bytes * 8 / (self.config.rate_mbps * 1e6) * 1e3

    # ---- joining ------------------------------------------------------------------------------

    @classmethod
    def from_process_group(
        cls,
        addr: str,
        policy: str,
        config: TransportConfig | None = None,
        group: Any = None,
        *,
        name: str = "",
    ) -> ParameterServer:
        """A worker's member: DDP's (default) group gives the rank, N and the store. `name`
        tells apart groups of one store (a job has one; the loopback harness one per case)."""
        if group is not None:
            raise ValueError("the parameter server joins through the default process group")
        config = config or TransportConfig()
        rank, workers = dist.get_rank(), dist.get_world_size()
        store = dist.distributed_c10d._get_default_store()
        return cls._join(store, rank, workers, addr, policy, config, name)

    @classmethod
    def join_as_server(
        cls,
        addr: str,
        policy: str,
        config: TransportConfig,
        master_addr: str,
        master_port: int,
        workers: int,
        *,
        name: str = "",
    ) -> ParameterServer:
        """The server's member: a client of the job's rendezvous store, rank N of N + 1."""
        timeout = timedelta(seconds=config.dilation.played(GROUP_TIMEOUT_S))
        store = dist.TCPStore(master_addr, master_port, is_master=False, timeout=timeout)
        return cls._join(store, workers, workers, addr, policy, config, name)

    @classmethod
    def _join(
        cls,
        store: Any,
        rank: int,
        workers: int,
        addr: str,
        policy: str,
        config: TransportConfig,
        name: str,
    ) -> ParameterServer:
        size = workers + 1
        if workers < 2:
            raise ValueError(f"collective: ps needs at least 2 workers, got {workers}")
        timeout_s = config.dilation.played(GROUP_TIMEOUT_S)
        group = transport_group(store, rank, size, timeout_s, name)
        token = wire.new_job_token() if rank == 0 else 0
        every = allgather_objects(group, size, (addr, policy, config, token))
        for r, (_, pol, cfg, _) in enumerate(every):
            if (pol, cfg) != (policy, config):
                raise ValueError(f"rank {rank} has {policy} {config} but rank {r} has {pol} {cfg}")
        addrs = [e[0] for e in every]
        ps = cls(rank, size, addrs, policy, config, job_token=int(every[0][3]), group=group)
        try:
            if rank == workers:
                ps._listener = socket.create_server((addrs[rank], ps._announce_port))
            group.barrier().wait()  # every member bound its sockets: no first packet is refused
            if rank == 0:
                ps._connect_link(timeout_s)
        except BaseException:
            ps.close()
            raise
        return ps

    @property
    def _announce_port(self) -> int:
        """The server's first transport port, over TCP: inside the spared control range (its
        control listener, when `--control tcp`, was closed once the peers connected)."""
        return port_of(self.config, self.server, 0)

    def _connect_link(self, timeout_s: float) -> None:
        addr = (self.addrs[self.server], self._announce_port)
        s = socket.create_connection(addr, timeout_s, (self.addrs[0], 0))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(SEND_TIMEOUT_S)
        s.sendall(HELLO.pack(self.job_token, 0))
        self._link = s

    def _accept_link(self) -> socket.socket:
        """The server: worker 0's connection (a stray client, or one without the job's hello,
        is refused)."""
        assert self._listener is not None
        self._listener.settimeout(self.config.dilation.played(GROUP_TIMEOUT_S))
        while True:
            s, (host, _port) = self._listener.accept()
            s.settimeout(SEND_TIMEOUT_S)
            try:
                token, rank = HELLO.unpack(_read_exactly(s, HELLO.size))
            except OSError:
                s.close()
                continue
            if token == self.job_token and rank == 0 and host == self.addrs[0]:
                self._listener.close()
                self._listener = None
                s.settimeout(self.config.dilation.played(GROUP_TIMEOUT_S))
                return s
            s.close()

    # ---- rounds -------------------------------------------------------------------------------

    def allreduce(
        self,
        data: np.ndarray,
        *,
        epsilon: float = 0.0,
        eps_id: int = 0,
        reliable: bool = False,
        inject_drop: bool = True,
        round_id: int | None = None,
        round_ends: bool = True,
    ) -> tuple[np.ndarray, RoundStats]:
        """As the transpose's; worker 0 first tells the server what round comes."""
        if self.rank == 0 and self.group is not None:
            a = Announce(len(data), epsilon, eps_id, reliable, inject_drop, self.t_max_ms,
                         self.p50_ms)  # fmt: skip
            self._link.sendall(a.frame())  # sent without waiting: it sits in the TCP buffer
        return super().allreduce(
            data,
            epsilon=epsilon,
            eps_id=eps_id,
            reliable=reliable,
            inject_drop=inject_drop,
            round_id=round_id,
            round_ends=round_ends,
        )

    def next_round(self) -> Announce | None:
        """The server: the next round's announcement, or None when the workers are done."""
        if self._link is None:
            self._link = self._accept_link()
        try:
            return Announce.of(_read_exactly(self._link, _FRAME.size))
        except ConnectionError:
            return None  # worker 0 closed without its last announcement: it failed

    def serve(self, a: Announce) -> tuple[np.ndarray, RoundStats]:
        """The server's part of one round: reduce what the workers send, send the result back.
        It contributes zeros, and takes worker 0's t_max and p50 so both sides end alike."""
        self.t_max_ms, self.p50_ms = a.t_max_ms, a.p50_ms
        zeros = np.zeros(a.n, dtype=np.float32)
        return super().allreduce(
            zeros, epsilon=a.epsilon, eps_id=a.eps_id, reliable=a.reliable, inject_drop=a.inject
        )

    def close(self) -> None:
        """Worker 0 tells the server the job is over (its callers close after the last round
        of every worker: `last_round_over`)."""
        try:
            if self.rank == 0 and self._link is not None:
                with contextlib.suppress(OSError):
                    self._link.sendall(DONE)
        finally:
            for s in (self._link, self._listener):
                if s is not None:
                    s.close()
            self._link = self._listener = self.group = None
            super().close()
