"""Who this rank is and how it joins the job: its identity (flags, or torchrun's environment),
the interface Gloo binds, the process group, and the closing barrier."""

from __future__ import annotations

import fcntl
import os
import socket
import struct
from dataclasses import dataclass
from datetime import timedelta

import torch.distributed as dist

from workloads.args import WorkerArgs
from workloads.spec import MASTER_PORT
from workloads.transport.dilation import TimeDilation

#: Bound on every Gloo collective and on the rendezvous.
GLOO_TIMEOUT_S = 120.0
_SIOCGIFADDR = 0x8915


@dataclass(frozen=True)
class Identity:
    rank: int
    world: int
    master_addr: str
    master_port: int
    addr: str  # this rank's UDP bind address
    from_env: bool  # launched by torchrun: rendezvous through its store (env://)


def _route_source(dest: str, port: int) -> str:
    """The local address the kernel would use towards dest (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((dest, port))
        return s.getsockname()[0]


def resolve_identity(args: WorkerArgs) -> Identity:
    env = os.environ
    rank = args.rank if args.rank is not None else int(env.get("RANK", "0"))
    world = args.world if args.world is not None else int(env.get("WORLD_SIZE", "1"))
    master = args.master_addr or env.get("MASTER_ADDR", "127.0.0.1")
    port = args.master_port or int(env.get("MASTER_PORT", MASTER_PORT))
    if not 0 <= rank < world:
        raise SystemExit(f"rank {rank} outside world {world}")
    addr = args.addr or _route_source(master, port)
    from_env = args.rank is None and "RANK" in env and "MASTER_ADDR" in env
    return Identity(rank, world, master, port, addr, from_env=from_env)


def ifname_of(addr: str) -> str | None:
    """The interface holding IPv4 `addr`: Gloo must bind there, not where the hostname points
    (inside a Mininet host the hostname resolves to the root namespace's address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            req = struct.pack("256s", name.encode()[:15])
            try:
                res = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, req)
            except OSError:
                continue
            if socket.inet_ntoa(res[20:24]) == addr:
                return name
    return None


def init_group(ident: Identity, dilation: float = 1.0) -> None:
    if "GLOO_SOCKET_IFNAME" not in os.environ:
        name = ifname_of(ident.addr)
        if name is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = name
    # under torchrun its agent already serves the store on MASTER_PORT; env:// reuses it
    init = "env://" if ident.from_env else f"tcp://{ident.master_addr}:{ident.master_port}"
    dist.init_process_group(
        "gloo",
        init_method=init,
        rank=ident.rank,
        world_size=ident.world,
        timeout=timedelta(seconds=TimeDilation(dilation).played(GLOO_TIMEOUT_S)),
    )


def last_round_over() -> None:
    """Wait until every rank has finished its last round before any transport stops: a rank
    still repairing its last round needs its peers to answer NACKs (closing first left it
    waiting for repairs that never came, until its cap)."""
    dist.barrier()
