"""The experiment spec: every knob of one run, declared once, validated before anything is built.

`RunSpec` is the worker's `WorkerSpec` (workloads/spec.py) plus what the orchestrator alone
reads: the network, the bursts, the worker count and where results go. Each field carries its
type, default, range, help and `--help` panel; `testbed run`'s flags, the worker's flags and
the file handed to each worker (`worker_spec`) all derive from the fields.

A spec comes from CLI flags or a TOML file (`--config`), flags overriding the file. Its hash
names the experiment for sweeps (resume by spec hash + repeat), so the hash covers what changes
the measurement and nothing else (not `out`, not `run_id`, not `label`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from testbed.base.smallfile import RefusedFile, read_small
from testbed.bursts.impairments import LOSS_BACKENDS
from topologies import BUILDERS
from workloads.spec import (
    BURSTS,
    NETWORK,
    OUTPUT,
    WORKER_WORKLOADS,
    WORKLOAD,
    SpecError,
    WorkerSpec,
    knob,
    validate,
)
from workloads.transport import dilation as tdilation
from workloads.transport.completion import TCP
from workloads.transport.config import TransportConfig

__all__ = [
    "MAX_NODES",
    "PRESENTATION_FIELDS",
    "TOPOLOGY_FIELDS",
    "RunSpec",
    "SpecError",
    "build_spec",
    "hash_of",
    "read_config",
]

#: A built-in topology: a name of the topology registry.
Topo = Literal[tuple(BUILDERS)]  # type: ignore[valid-type]
#: A dilation factor, or auto (chosen by a calibration before the run).
Dilation = Annotated[float, Field(**tdilation.LIMITS)] | Literal["auto"]
_D_RANGE = f"{tdilation.LIMITS['ge']}..{tdilation.LIMITS['le']:,}"  # 1..1,000, as --help says it
#: auto, or a loss mechanism of the impairment registry.
Impair = Literal[("auto", *LOSS_BACKENDS)]  # type: ignore[valid-type]

#: Values besides its default that keep a late field out of the hash: D = 1 was dilation's
#: default before auto (whatever D auto picks, the tables hold emulated times).
HASH_NEUTRAL = {"dilation": (1.0,)}
#: Fields that say where or how results are shown, not what is measured.
PRESENTATION_FIELDS = frozenset({"out", "run_id", "label"})
#: Fields added after sweeps were first published: at their default they stay out of the hash,
#: so a sweep or bench started before them still finds its finished runs.
LATE_FIELDS = frozenset(
    {
        "base_port",
        "drop",
        "checkpoint_every",
        "warmup_steps",
        "mtu",
        "dilation",
        "t_max_p50",
        "fastpath",
        "stop",
        "fill",
        "control",
        "p_low",
        "p_gap",
        "integrity",
        "collective",
    }
)
#: The fields that describe the network (`testbed topo` takes these).
TOPOLOGY_FIELDS = ("topo", "topo_file", "k", "hosts_per_edge", "leaves", "spines",
                   "hosts_per_leaf", "n", "bw", "queue")  # fmt: skip
#: Largest network one machine emulates (hosts + routers): k=14 fat-tree (931 nodes) fits.
MAX_NODES = 1000


def _size_params(topo: str) -> tuple[str, ...]:
    """The spec fields a built-in topology's builder takes, in its order (the first is its size):
    its parameters that are knobs here, but for the link's (`bw` and `queue`, passed apart)."""
    params = inspect.signature(BUILDERS[topo]).parameters
    return tuple(n for n in params if n in TOPOLOGY_FIELDS and n not in ("bw", "queue"))


def _fattree_nodes(k: int, hosts_per_edge: int | None) -> int:
    half = k // 2
    return k * half * (hosts_per_edge or half) + k**2 + half**2


#: Hosts + routers of each built-in topology from its size parameters, without building it
#: (the MAX_NODES check runs before a huge topology would be built).
_NODE_COUNT: dict[str, Callable[..., int]] = {
    "fattree": _fattree_nodes,
    "leafspine": lambda leaves, spines, hosts_per_leaf: leaves * (hosts_per_leaf + 1) + spines,
    "dumbbell": lambda n: 2 * n + 2,
    "star": lambda n: n + 1,
}

#: A safe folder name: no path separators, no leading dot (`.last.<pid>` and the like are the
#: results root's own).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
#: Run ids the results root keeps for itself: `last` is the symlink to the newest run.
RESERVED_RUN_IDS = frozenset({"last"})
#: Largest `--config` read: a run's knobs fit in a few KiB.
MAX_CONFIG_BYTES = 1 << 20


class RunSpec(WorkerSpec):
    """One run. Defaults: fat-tree k=4 at 100 Mbit/s, 4 workers, dblp, the digits CNN, seed 0."""

    topo: Topo = knob("fattree", NETWORK, "Built-in topology.")
    topo_file: Path | None = knob(
        None, NETWORK, "Custom topology TOML (nodes, tiers, links); overrides --topo."
    )
    k: int = knob(4, NETWORK, "fattree: arity k, even.", ge=2, le=254)
    hosts_per_edge: int | None = knob(
        None, NETWORK, "fattree: hosts per edge router (default k/2; more oversubscribes).",
        ge=1, le=253,
    )  # fmt: skip
    leaves: int = knob(4, NETWORK, "leafspine: leaf routers.", ge=1, le=256)
    spines: int = knob(2, NETWORK, "leafspine: spine routers.", ge=1, le=256)
    hosts_per_leaf: int = knob(4, NETWORK, "leafspine: hosts per leaf.", ge=1, le=253)
    n: int = knob(4, NETWORK, "star: hosts; dumbbell: hosts per side.", ge=1, le=253)
    bw: float = knob(100.0, NETWORK, "Link rate, Mbit/s.", gt=0, le=10_000)
    queue: int = knob(50, NETWORK, "Egress queue limit, packets (shallow).", ge=2, le=100_000)
    tcp_rto_min_ms: float = knob(200.0, NETWORK, "tcp_rto_min in every host, ms.", ge=1, le=10_000)
    dilation: Dilation = knob(
        "auto", NETWORK, "Time dilation D (DieCast): link rates / D, every duration and the "
        "compute x D, tables in emulated time. auto: the smallest D at which a short "
        "calibration is faithful on this machine, calibrated once per network shape and "
        f"cached (testbed doctor says where). Range: {_D_RANGE} or auto.",
    )  # fmt: skip

    burst: str = knob(
        "none", BURSTS, "Preset (`testbed bursts list`) or a TOML file.", min_length=1,
        max_length=4096,
    )  # fmt: skip
    impair: Impair = knob("auto", BURSTS, "Loss mechanism (auto: the best this kernel has).")

    workers: int = knob(4, WORKLOAD, "DDP ranks, one per host.", ge=1, le=MAX_NODES)
    probe_src: str | None = knob(None, WORKLOAD, "iperf3/ping: source host.", max_length=64)
    probe_dst: str | None = knob(None, WORKLOAD, "iperf3/ping: destination host.", max_length=64)
    duration_s: float = knob(20.0, WORKLOAD, "iperf3/ping: seconds.", gt=0, le=3600)
    timeout_s: float = knob(
        900.0, WORKLOAD, "A run with no progress this long fails, s.", gt=0, le=86_400
    )

    out: Path = knob(Path("results"), OUTPUT, "Results root.")
    run_id: str | None = knob(
        None, OUTPUT, "Run folder name (default: time, spec hash, pid).", pattern=NAME_PATTERN
    )
    label: str | None = knob(
        None, OUTPUT, "Name of this variant in reports (default: derived).",
        pattern=r"^\w[\w .,+=()-]{0,79}$",
    )  # fmt: skip

    @model_validator(mode="after")
    def _consistent(self) -> RunSpec:
        if self.topo == "fattree" and self.k % 2:
            raise ValueError("k: must be even for a fat-tree")
        if self.run_id in RESERVED_RUN_IDS:
            raise ValueError(f"run_id: `{self.run_id}` is reserved (results/last: the newest run)")
        self._ports_fit()
        if self.collective == "ps" and self.workers < 2:
            raise ValueError("collective: ps needs at least 2 workers (and a host for the server)")
        if self.topo_file is not None and not self.topo_file.is_file():
            raise ValueError(f"topo_file: {self.topo_file} is not a file")
        if self.topo_file is None and (size := self.planned_nodes()) > MAX_NODES:
            field = _size_params(self.topo)[0]
            raise ValueError(
                f"{field}: this {self.topo} has {size:,} nodes; the limit is {MAX_NODES:,} "
                f"(MAX_NODES: what one machine emulates)"
            )
        return self

    def _ports_fit(self) -> None:
        """The UDP transport binds base + rank*k + i for every rank: the last must be a port,
        or the run would fail only after the network is up."""
        if self.workload not in WORKER_WORKLOADS or self.transport == TCP:
            return
        cfg = TransportConfig(base_port=self.base_port)
        if (last := cfg.last_port(self.workers)) > 65535:
            raise ValueError(
                f"base_port: {self.workers} workers x {cfg.ports_per_peer} ports from "
                f"{self.base_port} end at port {last}, above 65535; lower --base-port"
            )

    def planned_nodes(self) -> int:
        """Hosts + routers of the built-in topology, counted without building it."""
        return _NODE_COUNT[self.topo](**self._topology_params())

    def _topology_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _size_params(self.topo)}

    def topology(self):
        """The Topology this spec describes (nothing is brought up); SpecError names topo or
        topo_file."""
        from topologies import TopologyError

        where = "topo_file" if self.topo_file is not None else "topo"
        try:
            topo = self._build_topology()
        except TopologyError as e:
            raise SpecError(where, str(e)) from e
        if len(topo.nodes) > MAX_NODES:
            raise SpecError(where, f"{len(topo.nodes):,} nodes; the limit is {MAX_NODES:,}")
        return topo

    def _build_topology(self):
        from topologies import build, load_topology_file

        if self.topo_file is not None:
            return load_topology_file(self.topo_file)
        return build(self.topo, mbps=self.bw, queue=self.queue, **self._topology_params())

    def measured(self) -> dict[str, Any]:
        """The fields that change the measurement (JSON types): a sweep's base spec."""
        return self.model_dump(mode="json", exclude=set(PRESENTATION_FIELDS))

    def spec_hash(self) -> str:
        """Stable 12-hex digest of what the run measures (not where it is written)."""
        data = self.measured()
        for name in LATE_FIELDS:
            if data[name] == RunSpec.model_fields[name].default or data[name] in HASH_NEUTRAL.get(
                name, ()
            ):
                del data[name]
        if self.topo_file is not None:
            data["topo_file"] = hashlib.sha256(self.topo_file.read_bytes()).hexdigest()
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def pace(self) -> float:
        """UDP pacing per rank, Mbit/s: pace_mbps, or 0.95 x the link rate."""
        return self.pace_mbps if self.pace_mbps is not None else 0.95 * self.bw

    def worker_spec(self, dilation: float | None = None) -> WorkerSpec:
        """What each worker is handed: its fields of this spec, the pacing rate (emulated: the
        worker divides it by D) and the dilation resolved (`auto` is decided by a calibration
        before any worker starts: pass its D)."""
        d = self.dilation if dilation is None else dilation
        if d == "auto":
            raise ValueError("dilation: auto must be resolved (calibrated) before workers start")
        data = self.model_dump(include=set(WorkerSpec.model_fields))
        return WorkerSpec.model_validate(data | {"pace_mbps": self.pace, "dilation": d})


def hash_of(data: dict[str, Any]) -> str:
    """The spec hash of a spec given as a dict (a sweep's planned run)."""
    return RunSpec.model_validate(data).spec_hash()


def read_config(config: Path) -> dict[str, Any]:
    """The `[run]` table of a TOML config (or its top level); SpecError names `config`. Only a
    regular file of at most MAX_CONFIG_BYTES is read (not a device, a FIFO, a huge file)."""
    path = Path(config)
    try:
        text = read_small(path, MAX_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError as e:
        raise SpecError("config", f"{path} does not exist") from e
    except IsADirectoryError as e:
        raise SpecError("config", f"{path} is a directory, not a TOML file") from e
    except RefusedFile as e:
        raise SpecError("config", f"{e}; give a TOML file under 1 MiB") from e
    except UnicodeDecodeError as e:
        raise SpecError("config", f"{path} is not UTF-8 text (a TOML file?)") from e
    except OSError as e:
        raise SpecError("config", f"{path}: cannot read: {e.strerror}") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError("config", f"{path}: {e}") from e
    run = data.get("run", data)
    if not isinstance(run, dict):
        raise SpecError("config", f"{path}: `run` must be a table ([run]), not {run!r}")
    return run


def check_types(data: dict[str, Any]) -> None:
    """A config file's values as written, type-checked strictly (pydantic's strict mode, as
    JSON: `rescale = "yes"` or `workers = 4.0` is an error, not true or 4); CLI flags are
    text and are still parsed. Only the fields' own checks count here: the rules between
    fields are checked once the flags are merged in. SpecError names the field."""
    for name, value in data.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError) as e:
            raise SpecError(name, f"{value!r} is a TOML {type(value).__name__}") from e
    try:
        RunSpec.model_validate_json(json.dumps(data), strict=True)
    except ValidationError as e:
        for err in e.errors():
            if err["loc"]:
                got = repr(err["input"])
                got = got if len(got) <= 60 else got[:57] + "..."
                note = " (a config value is taken as written)" if "type" in err["type"] else ""
                raise SpecError(str(err["loc"][0]), f"{err['msg']}, got {got}{note}") from e


def build_spec(config: Path | None = None, **flags: Any) -> RunSpec:
    """Merge a TOML config with CLI flags (flags given as not-None win); raise SpecError."""
    given = {k: v for k, v in flags.items() if v is not None}
    data = read_config(config) if config is not None else {}
    check_types({k: v for k, v in data.items() if k not in given})
    return validate(RunSpec, data | given)
