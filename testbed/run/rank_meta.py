"""A rank's meta.json as `testbed ingest` reads it: typed, bounded, and never through a symlink.

The folders ingest reads were copied from other machines, so every value a check or the merge
uses is validated here once (strict JSON types: a rank is an integer, not "0"); anything else
is an IngestError naming the file, never a traceback halfway through a merge.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from testbed.base.smallfile import RefusedFile, read_small

#: What a rank's meta.json must hold (workers before ingest existed wrote no spec or host).
META_KEYS = ("rank", "world", "master", "spec", "host", "started", "versions")
#: A meta.json is a few KiB; anything near this is not one.
MAX_META_BYTES = 1 << 20


class IngestError(ValueError):
    """The folders are not one complete torchrun job; the message names what is wrong."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)


class _Started(_Open):
    realtime_s: float
    monotonic_s: float


class _Spec(_Open):
    workload: str
    transport: str
    rounds: int = Field(0, ge=0)
    seed: int = Field(0, ge=0)


class _TransportParams(_Open):
    engine_cpu_ms: float | None = None
    sent_bytes: float | None = None
    rcvbuf_bytes: int | None = None
    sndbuf_bytes: int | None = None
    suspect: dict[str, int] | None = None


class RankMeta(_Open):
    """The fields of meta.json that ingest reads, with their JSON types."""

    rank: int = Field(ge=0)
    world: int = Field(ge=1)
    master: str
    host: str
    spec: _Spec
    started: _Started
    versions: dict[str, str]
    boot_id: str | None = None
    kernel: str = ""
    nproc: int | None = None
    steps_total: int | None = Field(None, ge=0)
    transport_params: _TransportParams | None = None
    phase_config: dict[str, Any] | None = None


def read_meta(folder: Path) -> dict[str, Any]:
    """folder/meta.json, checked against RankMeta; IngestError names the file."""
    path = folder / "meta.json"
    try:
        meta = json.loads(read_small(path, MAX_META_BYTES, follow=False))
    except (OSError, RefusedFile, ValueError) as e:  # ValueError: not UTF-8, not JSON
        raise IngestError(f"{path}: cannot read: {e}") from e
    if not isinstance(meta, dict):
        raise IngestError(f"{path}: not a JSON object")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise IngestError(
            f"{path} has no {', '.join(missing)}: written by a worker older than "
            f"`testbed ingest`; run the job again with this checkout"
        )
    try:
        RankMeta.model_validate_json(json.dumps(meta))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise IngestError(f"{path}: {where}: {err['msg']}, got {err['input']!r}") from e
    return meta


def check_plain_files(folder: Path) -> None:
    """Raise IngestError unless everything under folder is a folder or a regular file: a
    symlink is never followed (it could copy any file of this machine into the run folder),
    a FIFO or device would hang the copy."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise IngestError(f"{path}: a symlink; ingest follows none (copy the file itself)")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise IngestError(f"{path}: not a regular file (a device, FIFO or socket)")
