"""The one results schema: tables, columns, units, and run.json (DESIGN §7).

Every writer (workers, the burst scheduler, the run orchestrator) validates
against this module before a file lands, and every reader (reports, sweeps)
relies on it. Units are part of the contract: times are float64 seconds on
CLOCK_MONOTONIC (one realtime anchor lives in run.json), latencies are ms,
loss / epsilon / accuracy are fractions in [0, 1], sizes are MiB of float32.

Tables are pandas DataFrames written as Parquet (pyarrow).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

#: 2: rounds.loop_late_ms; transport names from the policy registry. 3: rounds.bytes_skipped,
#: passes, pass_ms (older tables read with their defaults). 4: run.json transport_traits and
#: preset_role (analysis reads roles from them; `python -m testbed.run.migrate` adds them to
#: an older run.json)
SCHEMA_VERSION = 4

#: The files of one run folder, by table name.
TABLE_FILES = {
    "rounds": "rounds.parquet",
    "steps": "steps.parquet",
    "evals": "evals.parquet",
    "bursts": "bursts.parquet",
    "probes": "probes.parquet",
}

STAGES = ("scatter", "gather", "total")
TRAIN_PHASES = ("critical", "stable")
BURST_KINDS = ("loss", "squeeze", "incast", "delay", "none")


@dataclass(frozen=True)
class Column:
    """One column: its name, its dtype kind, and an optional closed range."""

    name: str
    kind: Literal["str", "int", "float", "bool"]
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] | None = None
    #: a column added after tables were written: a table without it reads with this value
    default: Any = None


FRACTION = {"lo": 0.0, "hi": 1.0}
NONNEG = {"lo": 0.0}

TABLES: dict[str, tuple[Column, ...]] = {
    # One row per (rank, round, stage). Every transport writes a `total` row per
    # (rank, round); the UDP transports may add `scatter` and `gather` rows.
    # A table's round latency is the max over ranks of the `total` rows.
    "rounds": (
        Column("run_id", "str"),
        Column("rank", "int", **NONNEG),
        Column("round", "int", **NONNEG),  # transport's round counter (all buckets)
        Column("iter", "int", **NONNEG),  # training iteration (or allreduce step)
        Column("bucket", "int", **NONNEG),  # DDP bucket index within the iteration
        # any registered completion policy, or tcp (workloads/transport/completion.py)
        Column("transport", "str"),
        Column("stage", "str", choices=STAGES),
        Column("train_phase", "str", choices=TRAIN_PHASES),
        Column("t_start_s", "float"),
        Column("t_end_s", "float"),
        Column("latency_ms", "float", **NONNEG),
        Column("bytes", "int", **NONNEG),  # payload bytes this rank sent in the round
        Column("pkts_expected", "int", **NONNEG),
        Column("pkts_received", "int", **NONNEG),
        Column("delivered_loss", "float", **FRACTION),  # fraction of expected data missing
        Column("epsilon", "float", **FRACTION),
        Column("nacks", "int", **NONNEG),
        Column("retx_pkts", "int", **NONNEG),
        Column("cap_hit", "bool"),
        Column("bad_dgrams", "int", **NONNEG),
        Column("cpu_wait_ms", "float", **NONNEG),  # run-queue wait during the round
        # worst lateness of the transport loop's timer wake-ups (NaN: not measured, e.g. tcp)
        Column("loop_late_ms", "float", **NONNEG),
        Column("is_warmup", "bool"),
        # payload bytes this rank did not send because the receiver said Stop (--stop early)
        Column("bytes_skipped", "int", **NONNEG, default=0),
        # the stage's passes at this rank as a receiver: the first transmission plus each
        # repair request to a peer (the most asked of any peer); total row: both stages'
        Column("passes", "int", **NONNEG, default=0),
        Column("pass_ms", "float", **NONNEG, default=float("nan")),  # latency_ms / passes
    ),
    "steps": (
        Column("run_id", "str"),
        Column("rank", "int", **NONNEG),
        Column("step", "int", **NONNEG),
        Column("epoch", "int", **NONNEG),
        Column("t_start_s", "float"),
        Column("compute_ms", "float", **NONNEG),
        Column("comm_ms", "float", **NONNEG),
        Column("step_ms", "float", **NONNEG),
        Column("train_loss", "float"),
        Column("lr", "float", **NONNEG),
    ),
    "evals": (
        Column("run_id", "str"),
        Column("step", "int", **NONNEG),
        Column("epoch", "int", **NONNEG),
        Column("t_s", "float"),
        Column("test_acc", "float", **FRACTION),
        Column("test_loss", "float"),
        Column("replica_drift", "float", **NONNEG),
    ),
    # One row per burst event and link direction: the ground truth of what the
    # network did. Applied times are NaN for an event that never got applied.
    "bursts": (
        Column("run_id", "str"),
        Column("event_id", "int", **NONNEG),
        Column("link", "str"),  # "a-b", node names in topology order
        Column("direction", "str"),  # "a->b" (the egress that was impaired)
        Column("kind", "str", choices=BURST_KINDS),
        Column("magnitude", "float", **NONNEG),
        # the round a round-aligned event hit (paper-*: planned times NaN), -1 for a time window
        Column("round", "int", lo=-1, default=-1),
        Column("planned_start_s", "float"),
        Column("planned_end_s", "float"),
        Column("applied_start_s", "float"),
        Column("applied_end_s", "float"),
        Column("drops", "int", **NONNEG),
    ),
    # Network-only probe workloads (iperf3 / ping), binned in time.
    "probes": (
        Column("run_id", "str"),
        Column("probe", "str", choices=("iperf3", "ping")),
        Column("t_start_s", "float"),
        Column("t_end_s", "float"),
        Column("mbps", "float", **NONNEG),
        Column("sent", "int", **NONNEG),
        Column("lost", "int", **NONNEG),
        Column("loss", "float", **FRACTION),
        Column("rtt_ms", "float"),  # NaN when the bin has no reply
    ),
}


class SchemaError(ValueError):
    """A table or run.json that does not match the schema; names the culprit."""


_KIND_CHECK = {
    "str": lambda s: pd.api.types.is_string_dtype(s) or pd.api.types.is_object_dtype(s),
    "int": pd.api.types.is_integer_dtype,
    "float": pd.api.types.is_float_dtype,
    "bool": pd.api.types.is_bool_dtype,
}


def empty(table: str) -> pd.DataFrame:
    """An empty frame with the table's columns and dtypes (for runs with no rows)."""
    dtypes = {"str": "object", "int": "int64", "float": "float64", "bool": "bool"}
    return pd.DataFrame({c.name: pd.Series(dtype=dtypes[c.kind]) for c in TABLES[table]})


def coerce(table: str, rows: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """Build a frame in the table's column order and dtypes from rows."""
    cols = TABLES[table]
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    if df.empty:
        return empty(table)
    missing = [c.name for c in cols if c.name not in df.columns and c.default is None]
    if missing:
        raise SchemaError(f"{table}: missing columns {missing}")
    later = {c.name: c.default for c in cols if c.name not in df.columns}
    if later:
        df = df.assign(**later)
    out = {}
    for c in cols:
        s = df[c.name]
        if c.kind == "int":
            s = s.astype("int64")
        elif c.kind == "float":
            s = s.astype("float64")
        elif c.kind == "bool":
            s = s.astype("bool")
        else:
            s = s.astype("object")
        out[c.name] = s
    return pd.DataFrame(out)


def validate(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """Raise SchemaError naming the first bad column; return df unchanged if valid."""
    if table not in TABLES:
        raise SchemaError(f"unknown table {table!r}; known: {sorted(TABLES)}")
    cols = TABLES[table]
    names = [c.name for c in cols]
    if list(df.columns) != names:
        extra = [c for c in df.columns if c not in names]
        missing = [c for c in names if c not in df.columns]
        raise SchemaError(
            f"{table}: columns differ from schema (missing {missing}, extra {extra}, "
            f"or out of order)"
        )
    for c in cols:
        s = df[c.name]
        if not _KIND_CHECK[c.kind](s.dtype):
            raise SchemaError(f"{table}.{c.name}: dtype {s.dtype} is not {c.kind}")
        if len(s) == 0:
            continue
        if c.kind in ("int", "float"):
            finite = s.dropna()
            if c.kind == "int" and len(finite) != len(s):
                raise SchemaError(f"{table}.{c.name}: missing values in an int column")
            if c.lo is not None and (finite < c.lo).any():
                raise SchemaError(f"{table}.{c.name}: value below {c.lo}: {finite.min()}")
            if c.hi is not None and (finite > c.hi + 1e-12).any():
                raise SchemaError(f"{table}.{c.name}: value above {c.hi}: {finite.max()}")
        if c.choices is not None:
            bad = set(s.unique()) - set(c.choices)
            if bad:
                raise SchemaError(f"{table}.{c.name}: {sorted(bad)} not in {list(c.choices)}")
    return df


def write_table(run_dir: Path, table: str, rows: list[dict[str, Any]] | pd.DataFrame) -> Path:
    """Coerce, validate and write one table of a run folder; returns its path."""
    df = validate(table, coerce(table, rows))
    path = Path(run_dir) / TABLE_FILES[table]
    df.to_parquet(path, index=False)
    return path


def read_table(run_dir: Path, table: str) -> pd.DataFrame:
    """Read one table; a run that never wrote it yields an empty, typed frame."""
    path = Path(run_dir) / TABLE_FILES[table]
    if not path.exists():
        return empty(table)
    return validate(table, coerce(table, pd.read_parquet(path)))


class RunInfo(BaseModel):
    """run.json: everything needed to interpret (and distrust) a run's tables."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    #: partial: an ingested job whose rank files lost lines mid-file (rows missing inside)
    status: Literal["running", "ok", "failed", "interrupted", "partial"]
    reason: str = ""
    workload: str = "train"
    transport: str = ""
    # What the transport is (workloads/transport/traits.py, as a plain dict): how a round ends,
    # whether ε means anything, and its role per comparison; empty for a run without one
    transport_traits: dict[str, Any] = Field(default_factory=dict)
    preset: str = "none"
    # The preset's role from its TOML: "calm" (the burst-free reference), "control" (the CPU
    # cost of bursts without their network effect) or "burst"; "" in a run.json before v4
    preset_role: str = ""
    preset_hash: str = ""
    seed: int = 0
    spec: dict[str, Any] = Field(default_factory=dict)
    spec_hash: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    # The source tree the run was made from (testbed/base/sourcetree.py): HEAD, and whether
    # tracked files differed from it; the report flags dirty runs and runs of older commits
    git_commit: str = ""
    git_dirty: bool = False
    kernel: str = ""
    capabilities: dict[str, Any] = Field(default_factory=dict)
    impairment_backend: str = ""
    impairment_reason: str = ""
    nproc: int = 0
    sysctls: dict[str, dict[str, str]] = Field(default_factory=dict)  # node -> sysctl -> value
    socket_buffers: dict[str, int] = Field(default_factory=dict)
    transport_params: dict[str, Any] = Field(default_factory=dict)
    worker_hosts: dict[str, str] = Field(default_factory=dict)  # rank -> host name
    flow_paths: list[dict[str, Any]] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # The fidelity verdict (analysis/fidelity.py): False when the CPU distorted the timing,
    # None when the run could not be judged (too few calm rounds under bursts).
    faithful: bool | None = True
    # The shape and seed's calibration the verdict compares with, at any D (fidelity.Reference
    # as a dict); empty when none was measured (an explicit D of a shape never calibrated)
    calibration: dict[str, Any] = Field(default_factory=dict)
    fidelity: dict[str, Any] = Field(default_factory=dict)
    cpu_ms_per_mib: float | None = None  # UDP transport loops' CPU per MiB sent, all ranks
    oversubscribed: bool = False
    # Time dilation D (testbed/dilation.py): the tables hold emulated times; how D was chosen
    dilation: float = 1.0
    dilation_reason: str = ""
    cpu_pressure: dict[str, float] = Field(default_factory=dict)
    idle_link_mbps: float | None = None  # iperf3 rank 0 -> rank 1 before the run, no bursts
    tcp_counters: dict[str, dict[str, int]] = Field(default_factory=dict)
    # Datagrams the transport rejected, by reason (e.g. "source", "token", "nonfinite"),
    # summed over ranks; empty means none. Any count here is a validity warning.
    rejections: dict[str, int] = Field(default_factory=dict)
    # Anchors: monotonic and realtime clocks read at the same instant.
    monotonic_anchor_s: float = 0.0
    realtime_anchor_s: float = 0.0
    t0_s: float | None = None  # monotonic time of the first training step (burst t = 0)
    wall_s: float | None = None
    summary: dict[str, Any] = Field(default_factory=dict)


def write_run_info(run_dir: Path, info: RunInfo) -> Path:
    path = Path(run_dir) / "run.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(info.model_dump_json(indent=2) + "\n")
    tmp.replace(path)
    return path


def read_run_info(run_dir: Path) -> RunInfo:
    path = Path(run_dir) / "run.json"
    try:
        return RunInfo.model_validate_json(path.read_text())
    except FileNotFoundError as e:
        raise SchemaError(f"{run_dir}: no run.json") from e
