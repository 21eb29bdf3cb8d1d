"""Transpose AllReduce over paced UDP: the public face of the transport.

The bucket is split into N shards and rank j owns shard j. Scatter-reduce: every rank sends
shard j of its bucket to rank j, which sums what arrives. Gather: every rank sends its reduced
shard to all. Two hops, so one lost packet costs one contribution, not a chain as in a ring.
Which data may be missing, and what replaces it, is the completion policy's business
(completion.py); `allreduce` returns the SUM over ranks.

    tar = TransposeAllReduce.from_process_group("10.0.0.2", "dblp", TransportConfig())
    # or, without torch.distributed: every rank passes the same secret
    tar = TransposeAllReduce(rank, world, addrs, "dblp", TransportConfig(), job_token=token)
    tar.calibrate(n_elems=1 << 20)          # burst-free p50 -> t_max = t_max_p50 (4) x p50
    total, stats = tar.allreduce(grad, epsilon=0.01)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from workloads.transport import wire
from workloads.transport.completion import (
    POLICIES,
    CompletionPolicy,
    Reliable,
    check_epsilon,
    idle_gap_s,
    make_policy,
)
from workloads.transport.config import TransportConfig
from workloads.transport.control import ControlLinks
from workloads.transport.endpoint import Endpoint
from workloads.transport.engine import LOSSY_GRACE_S, RELIABLE_GIVE_UP_S, Engine, Request
from workloads.transport.integrity import KEY_BYTES, new_mac_key
from workloads.transport.observer import RoundObserver
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.roundstate import Timing
from workloads.transport.stats import RoundStats

#: t_max before calibration: this many times a modelled p50 (pacing bound x 1.25 + 2 idle gaps).


class TransposeAllReduce:
    """One rank's Transpose AllReduce endpoint. All ranks call `allreduce` in the same order."""

    #: The rank that owns the whole bucket (the parameter server, ps.py); None: every rank
    #: owns an equal shard (layout.py).
    owner: int | None = None

    def __init__(
        self,
        rank: int,
        world: int,
        addrs: Sequence[str],
        policy: str,
        config: TransportConfig | None = None,
        *,
        job_token: int,
        mac_key: bytes | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}: one of {', '.join(POLICIES)}")
        if len(addrs) != world or not 0 <= rank < world:
            raise ValueError(f"rank {rank} / world {world} / {len(addrs)} addresses disagree")
        if world > 0xFFFF:
            raise ValueError("world must fit the 16-bit rank field")
        if not 0 < job_token < 1 << wire.TOKEN_BITS:
            raise ValueError(f"job_token must be a non-zero {wire.TOKEN_BITS}-bit secret")
        self.rank, self.world, self.policy_name = rank, world, policy
        self.config = cfg = config or TransportConfig()
        if cfg.integrity == "mac" and (mac_key is None or len(mac_key) != KEY_BYTES):
            raise ValueError(f"integrity mac needs the job's {KEY_BYTES}-byte MAC key")
        self.policy: CompletionPolicy = make_policy(policy, cfg)
        self._reliable = Reliable()
        self.p50_ms: float | None = None
        self.t_max_ms: float | None = cfg.t_max_ms
        self.gap_s = idle_gap_s(cfg.rate_mbps, cfg.mtu, cfg.time_scale)
        self.endpoint: Endpoint | None = None
        self.links: ControlLinks | None = None
        self.engine: Engine | None = None
        #: "compiled" or "python": which data path the engine runs (kept after close)
        self.fastpath: str | None = None
        #: told of every round that passes a round_id (observer.py); None: nobody is
        self.observer: RoundObserver | None = None
        self._round = 0
        if world > 1:
            self.endpoint = Endpoint(rank, addrs, cfg)
            if self.policy.control == "tcp":  # the paper's control channel, beside the UDP
                try:
                    self.links = ControlLinks(rank, addrs, cfg, job_token)
                except BaseException:
                    self.endpoint.close()
                    raise
            self.engine = Engine(rank, world, self.endpoint, cfg, job_token, self.links, mac_key)
            self.fastpath = self.engine.fastpath
            self.engine.start()

    @classmethod
    def from_process_group(
        cls,
        addr: str,
        policy: str,
        config: TransportConfig | None = None,
        group=None,
    ) -> TransposeAllReduce:
        """Learn every rank's UDP address through the (Gloo) process group.

        Rank 0 draws the job's secret token (and, with integrity mac, the MAC key) and
        broadcasts it over the group's own connections:
        never on a command line, in a file or in the rendezvous store (a TCPStore answers any
        client that reaches its port). Also checks that every rank was given the same policy
        and config (a mismatch would show up only as rejected datagrams), and returns after
        every rank has bound its sockets, so no first packet meets a closed port.
        """
        import torch.distributed as dist

        config = config or TransportConfig()
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        mine = (addr, policy, config)
        every: list[tuple[str, str, TransportConfig] | None] = [None] * world
        dist.all_gather_object(every, mine, group=group)
        for r, other in enumerate(every):
            assert other is not None
            if other[1:] != mine[1:]:
                raise ValueError(
                    f"rank {rank} has {policy} {config} but rank {r} has {other[1]} {other[2]}"
                )
        mac = config.integrity == "mac"
        secret = [(wire.new_job_token(), new_mac_key() if mac else None) if rank == 0 else None]
        dist.broadcast_object_list(
            secret, src=dist.get_global_rank(group, 0) if group else 0, group=group
        )
        token, key = secret[0]
        addrs = [o[0] for o in every if o is not None]
        tar = cls(rank, world, addrs, policy, config, job_token=int(token), mac_key=key)
        try:
            dist.barrier(group=group)
        except BaseException:
            tar.close()
            raise
        return tar

    @property
    def contributors(self) -> int:
        """Ranks whose data enter the sum (the hooks divide by it): a server is not one."""
        return self.world if self.owner is None else self.world - 1

    @property
    def rcvbuf_bytes(self) -> int:
        return self.endpoint.rcvbuf_bytes if self.endpoint else 0

    @property
    def sndbuf_bytes(self) -> int:
        return self.endpoint.sndbuf_bytes if self.endpoint else 0

    def modelled_p50_ms(self, n_elems: int) -> float:
        """Pacing bound x 1.25 + two idle gaps: the p50 assumed before calibration."""
        return 1.25 * self.bound_ms(n_elems) + 2e3 * self.gap_s

    def bound_ms(self, n_elems: int) -> float:
        """2 (N-1)/N S / B with S in wire bytes (headers included) and B the rank's rate."""
        n = self.world
        per = wire.elems_per_packet(self.config.mtu)
        wire_bytes = n_elems * 4 + -(-n_elems // per) * (wire.HEADER_BYTES + WIRE_OVERHEAD)
        return 2 * (n - 1) / n * wire_bytes * 8 / (self.config.rate_mbps * 1e6) * 1e3

    def _timing(self, n_elems: int) -> Timing:
        if self.t_max_ms is not None:
            t_max = self.t_max_ms
            p50 = self.p50_ms if self.p50_ms is not None else t_max / self.config.t_max_p50
        else:
            p50 = self.modelled_p50_ms(n_elems)
            t_max = self.config.t_max_p50 * p50
        pair_rate = self.config.rate_mbps * 1e6 / 8 / max(1, self.world - 1)
        return Timing(
            t_max_s=t_max / 1e3,
            p50_s=p50 / 1e3,
            gap_s=self.gap_s,
            pair_pkt_s=(self.config.mtu + 14) / pair_rate,
        )

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
        """SUM over ranks of `data` (1-D float32), and this rank's record of the round.

        Elements whose data was lost hold what the policy puts there, in SUM units so that
        SUM / N is the intended mean: optireduce keeps this rank's own value x (mean x / N, as
        OptiReduce), dblp puts N x (mean x); see completion.py.

        epsilon is this round's loss budget (read by loss-bounded policies such as dblp, the
        one route by which ε reaches a policy); reliable=True runs this round exactly whatever
        the policy (DDP's iteration 0). inject_drop=False exempts the
        round from the configured test loss (calibration rounds are burst-free).
        round_id names the caller's round for the `observer`: begin before this call's timed
        part, end after it if round_ends (the round's last call); without one, not observed.
        """
        arr = np.asarray(data)
        if arr.ndim != 1:
            raise ValueError(f"allreduce takes a 1-D array, got shape {arr.shape}")
        if arr.dtype != np.float32:
            raise TypeError(f"allreduce takes float32, got {arr.dtype}")
        check_epsilon(epsilon)
        own = np.array(arr, dtype=np.float32, copy=True)
        policy = self._reliable if reliable else self.policy
        if not policy.traits.uses_epsilon:
            epsilon = 0.0
        if self.engine is None:
            return self._alone(own, epsilon)
        observer = self.observer if round_id is not None else None
        if observer is not None:
            observer.begin(round_id)
        timing = self._timing(len(own))
        inject = inject_drop and self.config.drop > 0
        req = Request(own, policy, epsilon, eps_id, timing, inject, self.owner)
        self.engine.submit(req)
        # The engine gives up on its own (RELIABLE_GIVE_UP_S, or the budget + grace); this
        # outer bound only catches an engine that died without answering.
        wait = RELIABLE_GIVE_UP_S + timing.t_max_s + 2 * LOSSY_GRACE_S
        if not req.done.wait(wait):
            raise TimeoutError(f"rank {self.rank}: allreduce got no answer in {wait:.0f} s")
        if req.error is not None:
            raise RuntimeError(f"rank {self.rank}: transport failed") from req.error
        assert req.result is not None
        self._round += 1
        if observer is not None and round_ends:
            observer.end(round_id)
        return req.result

    def _alone(self, own: np.ndarray, eps: float) -> tuple[np.ndarray, RoundStats]:
        now = time.monotonic()
        self._round += 1
        stats = RoundStats(
            self._round - 1, now, now, 0.0, 0.0, 0.0, 0, 0, 0, 0.0, eps, 0, 0, False,
            policy=self.policy_name,
        )  # fmt: skip
        return own, stats

    def calibrate(self, n_elems: int, rounds: int = 5) -> float:
        """Burst-free p50 (ms) of reliable rounds of n_elems, agreed over ranks (their max).

        Sets t_max = t_max_p50 x p50 unless the config fixed t_max_ms. Every rank must call it
        at the same point. The injected test loss is off during calibration.
        """
        if rounds < 1:
            raise ValueError("calibrate needs at least one round")
        rng = np.random.default_rng(self.config.seed + 17 * self.rank)
        lat = []
        for _ in range(rounds):
            buf = rng.standard_normal(n_elems).astype(np.float32)
            _, st = self.allreduce(buf, reliable=True, inject_drop=False)
            lat.append(st.latency_ms)
        mine = np.zeros(self.world, dtype=np.float32)
        mine[self.rank] = float(np.median(lat))
        every, _ = self.allreduce(mine, reliable=True, inject_drop=False)
        self.p50_ms = float(every.max())
        if self.config.t_max_ms is None:
            self.t_max_ms = self.config.t_max_p50 * self.p50_ms
        return self.p50_ms

    def close(self) -> None:
        if self.engine is not None:
            self.engine.shutdown()
            self.engine = None
        if self.links is not None:
            self.links.close()
            self.links = None
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None

    def __enter__(self) -> TransposeAllReduce:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
