"""The sweep's pure logic: the run matrix, its seeds and names, and whether a run is done.

Seeds are base_seed + repeat for every transport, so repeat r of each preset replays the
same burst schedule (and the same ECMP hash seed) for every transport it compares. A run's
folder name carries transport, preset, repeat and the spec hash, so re-running the same
sweep finds its finished runs by name; one whose run.json says `ok` is skipped, anything
else (failed, interrupted, still "running" after a crash, unreadable) is run again after
its old folder is moved aside.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from analysis.schema import SchemaError, read_run_info


class Decision(StrEnum):
    run = "run"  # never started
    skip = "skip"  # finished ok
    retry = "retry"  # started but not ok: move the old folder aside, run again


@dataclass(frozen=True)
class PlannedRun:
    variant: str  # the transport, or a bench variant's name ("tcp-rto5ms")
    transport: str
    burst: str
    repeat: int
    seed: int
    spec_hash: str
    run_id: str
    spec: Mapping[str, Any] = field(compare=False, repr=False)


def parse_list(text: str, what: str) -> tuple[str, ...]:
    """ "tcp, optireduce,dblp" -> ("tcp", "optireduce", "dblp"); duplicates dropped, order kept."""
    items = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    if not items:
        raise ValueError(f"--{what}: give at least one value (comma-separated)")
    return items


def _slug(text: str) -> str:
    """A folder-safe name; a preset given as a TOML file path becomes its stem."""
    stem = Path(text).stem if text.endswith(".toml") else text
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-") or "x"


def run_id_for(variant: str, burst: str, repeat: int, spec_hash: str) -> str:
    return f"{_slug(variant)}-{_slug(burst)}-r{repeat}-{spec_hash[:12]}"


def expand_variants(
    base: Mapping[str, Any],
    variants: Mapping[str, Mapping[str, Any]],
    bursts: Sequence[str],
    repeats: int,
    hash_spec: Callable[[dict[str, Any]], str],
) -> list[PlannedRun]:
    """The matrix of named spec overrides x presets x repeats, repeat-major then preset then
    variant, so a sweep stopped early still holds complete comparisons for the repeats it
    finished. Every variant of repeat r gets seed base_seed + r."""
    if repeats < 1:
        raise ValueError("--repeats must be at least 1")
    base_seed = int(base.get("seed", 0) or 0)
    plan = []
    for repeat in range(repeats):
        seed = base_seed + repeat
        for burst in bursts:
            for name, over in variants.items():
                spec = {**base, **over, "burst": burst, "seed": seed}
                h = hash_spec(spec)
                plan.append(
                    PlannedRun(
                        name,
                        str(spec.get("transport", "")),
                        burst,
                        repeat,
                        seed,
                        h,
                        run_id_for(name, burst, repeat, h),
                        spec,
                    )
                )
    ids = [p.run_id for p in plan]
    if len(set(ids)) != len(ids):
        raise ValueError("two planned runs share a folder name (duplicate variant/preset?)")
    return plan


def expand(
    base: Mapping[str, Any],
    transports: Sequence[str],
    bursts: Sequence[str],
    repeats: int,
    hash_spec: Callable[[dict[str, Any]], str],
) -> list[PlannedRun]:
    """`testbed sweep`'s matrix: one variant per transport, the base spec otherwise."""
    variants = {t: {"transport": t} for t in transports}
    return expand_variants(base, variants, bursts, repeats, hash_spec)


def plan_digest(plan: Sequence[PlannedRun]) -> str:
    """8 hex naming the whole sweep: the same command finds the same default folder."""
    blob = "\n".join(sorted(p.run_id for p in plan))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def decide(run_dir: Path) -> Decision:
    """skip a run whose run.json says ok; retry any other started run; run a new one."""
    if not Path(run_dir).exists():
        return Decision.run
    try:
        status = read_run_info(run_dir).status
    except (SchemaError, ValueError):
        return Decision.retry
    return Decision.skip if status == "ok" else Decision.retry


def aside_path(run_dir: Path) -> Path:
    """Where a not-ok run folder moves before its retry: <run_id>.prev<N>, first free N."""
    run_dir = Path(run_dir)
    n = 1
    while (candidate := run_dir.with_name(f"{run_dir.name}.prev{n}")).exists():
        n += 1
    return candidate
