"""The experiment spec: every knob of one run, validated before anything is built.

A spec comes from CLI flags or a TOML file (`--config`), flags overriding the file.
Its hash names the experiment for sweeps (resume by spec hash + repeat), so the hash
covers what changes the measurement and nothing else (not `out`, not `json`).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Topo = Literal["fattree", "leafspine", "dumbbell", "star"]
Transport = Literal["dblp", "optireduce", "reliable", "tcp"]
Workload = Literal["train", "allreduce", "iperf3", "ping"]
Impair = Literal["auto", "netem", "iptables", "nft"]
Model = Literal["cnn", "resnet"]
Phase = Literal["on", "off"]
OptiMode = Literal["adaptive", "fixed"]

#: Fields that say where or how results are shown, not what is measured.
PRESENTATION_FIELDS = frozenset({"out", "run_id", "label"})


class SpecError(ValueError):
    """A bad spec; `field` names the culprit so the CLI can say which flag to fix."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


class RunSpec(BaseModel):
    """One run. Defaults: fat-tree k=4 at 100 Mbit/s, 4 workers, dblp, the digits CNN, seed 0."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # network
    topo: Topo = "fattree"
    topo_file: Path | None = None
    k: int = Field(4, ge=2, description="fat-tree arity (even)")
    hosts_per_edge: int | None = Field(None, ge=1)
    leaves: int = Field(4, ge=1)
    spines: int = Field(2, ge=1)
    hosts_per_leaf: int = Field(4, ge=1)
    n: int = Field(4, ge=2, description="hosts for dumbbell/star")
    bw: float = Field(100.0, gt=0, le=10_000, description="link rate, Mbit/s")
    queue: int = Field(50, ge=2, le=100_000, description="egress queue limit, packets")
    tcp_rto_min_ms: float = Field(200.0, ge=1, le=10_000)
    # impairment
    burst: str = "none"
    impair: Impair = "auto"
    # workload
    workload: Workload = "train"
    transport: Transport = "dblp"
    model: Model = "cnn"
    workers: int = Field(4, ge=1)
    epochs: int = Field(5, ge=1)
    steps: int | None = Field(None, ge=1, description="cap on training steps (all epochs)")
    batch_size: int = Field(16, ge=1, description="per rank")
    lr: float = Field(0.1, gt=0)
    bucket_cap_mb: float = Field(25.0, gt=0)
    pace_mbps: float | None = Field(None, gt=0, description="UDP pacing per rank; None: 0.95 x bw")
    phase: Phase = "on"
    eps_critical: float | None = Field(None, ge=0, lt=1)
    eps_stable: float | None = Field(None, ge=0, lt=1)
    epsilon: float | None = Field(None, ge=0, lt=1, description="allreduce workload / phase off")
    optireduce_mode: OptiMode = "adaptive"
    rescale: bool = False
    t_max_ms: float | None = Field(None, gt=0)
    resync_every: int | None = Field(None, ge=1)
    size_mib: float = Field(4.0, gt=0, le=1024, description="allreduce workload bucket, MiB")
    interval_ms: float = Field(20.0, ge=0, description="allreduce workload compute gap")
    rounds: int = Field(100, ge=1, description="allreduce workload rounds")
    probe_src: str | None = None
    probe_dst: str | None = None
    duration_s: float = Field(20.0, gt=0, le=3600, description="probe workload length")
    threads: int = Field(1, ge=1)
    timeout_s: float = Field(900.0, gt=0, description="a run with no progress this long fails")
    seed: int = Field(0, ge=0)
    # presentation
    out: Path = Path("results")
    run_id: str | None = None
    label: str | None = Field(None, description="variant name in reports (default: derived)")

    @model_validator(mode="after")
    def _consistent(self) -> RunSpec:
        if self.topo == "fattree" and self.k % 2:
            raise ValueError("k: must be even for a fat-tree")
        if self.workload == "train" and self.phase == "on" and self.epsilon is not None:
            raise ValueError(
                "epsilon: pins ε only with phase off (or in the allreduce workload); "
                "with the phase controller on, set eps_critical / eps_stable"
            )
        if self.topo_file is not None and not self.topo_file.exists():
            raise ValueError(f"topo_file: {self.topo_file} does not exist")
        return self

    def spec_hash(self) -> str:
        """Stable 12-hex digest of what the run measures (not where it is written)."""
        data = self.model_dump(mode="json", exclude=set(PRESENTATION_FIELDS))
        if self.topo_file is not None:
            data["topo_file"] = hashlib.sha256(self.topo_file.read_bytes()).hexdigest()
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def pace(self) -> float:
        return self.pace_mbps if self.pace_mbps is not None else 0.95 * self.bw


def _first_error(err: ValidationError) -> SpecError:
    e = err.errors()[0]
    if e["loc"]:
        return SpecError(".".join(str(p) for p in e["loc"]), e["msg"])
    # a cross-field rule: its message starts with the field it blames ("k: ...")
    field, _, msg = e["msg"].removeprefix("Value error, ").partition(": ")
    return SpecError(field, msg)


def build_spec(config: Path | None = None, **flags) -> RunSpec:
    """Merge a TOML config with CLI flags (flags given as not-None win); raise SpecError."""
    data: dict = {}
    if config is not None:
        try:
            data = tomllib.loads(Path(config).read_text())
        except FileNotFoundError as e:
            raise SpecError("config", f"{config} does not exist") from e
        except tomllib.TOMLDecodeError as e:
            raise SpecError("config", f"{config}: {e}") from e
        data = data.get("run", data)
    data.update({k: v for k, v in flags.items() if v is not None})
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        raise _first_error(e) from e
