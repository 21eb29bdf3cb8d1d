"""The run folder: creating it, merging the ranks' JSON-lines rows into Parquet, `results/last`,
and the parts of run.json read from this machine (versions) or from the ranks' meta.json.

Workers append one JSON object per line and flush per step, so a killed run still has
every row it finished; merging validates each table against `analysis.schema` once.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from analysis import schema
from workloads.spec import SpecError

RANK_TABLES = ("rounds", "steps", "evals")


def new_run_id(spec_hash: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{spec_hash[:6]}-{os.getpid() % 10000:04d}"


def check_out(out_root: Path, run_id: str | None) -> None:
    """Raise SpecError (naming out or run_id) when a new run cannot go into out_root, before
    anything is built: out_root is a file, the run folder exists, or the nearest folder that
    exists is not writable. Pure: creates nothing."""
    out_root = Path(out_root)
    if out_root.exists() and not out_root.is_dir():
        raise SpecError("out", f"{out_root} exists and is not a folder")
    if run_id is not None and os.path.lexists(out_root / run_id):
        raise SpecError("run_id", f"{out_root / run_id} exists; give a new run id")
    nearest = out_root.absolute()
    while not nearest.exists():
        nearest = nearest.parent
    if not nearest.is_dir():
        raise SpecError("out", f"cannot create {out_root}: {nearest} is not a folder")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise SpecError("out", f"cannot create {out_root}: {nearest} is not writable")


def create_run_dir(out_root: Path, run_id: str) -> Path:
    """out_root/run_id, new; SpecError names run_id when it exists, out when it cannot be
    made (a root may refuse what `check_out` could not foresee: /proc)."""
    run_dir = Path(out_root) / run_id
    try:
        Path(out_root).mkdir(parents=True, exist_ok=True)
        run_dir.mkdir()
    except FileExistsError as e:
        if not Path(out_root).is_dir():
            raise SpecError("out", f"{out_root} exists and is not a folder") from e
        raise SpecError("run_id", f"{run_dir} exists; give a new run id") from e
    except OSError as e:
        raise SpecError("out", f"cannot create {run_dir}: {e.strerror}") from e
    return run_dir


def point_last(out_root: Path, run_dir: Path) -> None:
    """`results/last` -> the newest run (relative, so the folder can be moved)."""
    link = Path(out_root) / "last"
    tmp = Path(out_root) / f".last.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(link)


def read_jsonl(path: Path, bad: list[int] | None = None) -> list[dict]:
    """Rows of a JSON-lines file; a line that is not a row (a JSON object) is skipped: a torn
    last line is what a killed writer leaves, so only the others are put in `bad` (numbers
    from 1), for a caller that must say the rows are not whole."""
    rows: list[dict] = []
    if not path.exists():
        return rows
    lines = path.read_text(errors="replace").splitlines()  # bad bytes: a bad line
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        elif bad is not None and i != last:
            bad.append(i + 1)
    return rows


def merge_rank_tables(run_dir: Path) -> dict[str, int]:
    """Merge rank*/<table>.jsonl into <table>.parquet; returns row counts per table."""
    counts = {}
    for table in RANK_TABLES:
        rows: list[dict] = []
        for rank_dir in sorted(run_dir.glob("rank*")):
            rows.extend(read_jsonl(rank_dir / f"{table}.jsonl"))
        schema.write_table(run_dir, table, rows)
        counts[table] = len(rows)
    return counts


def rank_meta(run_dir: Path) -> dict[int, dict]:
    """Each rank's meta.json (transport parameters, effective socket buffers)."""
    metas = {}
    for rank_dir in sorted(run_dir.glob("rank*")):
        path = rank_dir / "meta.json"
        if path.exists():
            try:
                metas[int(rank_dir.name[4:])] = json.loads(path.read_text())
            except (ValueError, json.JSONDecodeError):
                continue
    return metas


def transport_fields(run_dir: Path) -> dict[str, Any]:
    """run.json's fields from the ranks' meta.json: each rank's socket buffers, rank 0's
    transport parameters (with its phase config), the datagrams the transport rejected
    summed over ranks, and the UDP transport loops' CPU per MiB sent."""
    socket_buffers: dict[str, int] = {}
    transport_params: dict[str, Any] = {}
    rejections: Counter[str] = Counter()
    cpu_ms = sent = 0.0
    for rank, meta in rank_meta(run_dir).items():
        params = meta.get("transport_params") or {}
        cpu_ms += params.get("engine_cpu_ms") or 0.0
        sent += params.get("sent_bytes") or 0
        for key in ("rcvbuf_bytes", "sndbuf_bytes"):
            if params.get(key) is not None:
                socket_buffers[f"rank{rank}.{key}"] = int(params[key])
        rejections.update(params.get("suspect") or {})
        if rank == 0:
            transport_params = {**params, "phase": meta.get("phase_config") or {}}
    return {
        "socket_buffers": socket_buffers,
        "transport_params": transport_params,
        "rejections": dict(rejections),
        "cpu_ms_per_mib": cpu_ms / (sent / 2**20) if sent else None,
    }
