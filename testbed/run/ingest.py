"""The rank folders of one torchrun job -> a run folder (`testbed ingest DIR... --out RUN_DIR`).

Under torchrun every rank writes `<--out>/rank<R>/` (JSON-lines rows and meta.json) on its own
machine. Ingest takes those folders, copied from any number of machines (a DIR is a rank
folder or a folder holding some), checks that they are one job (one world size, every rank
0..N-1 exactly once, one spec, one master, started within `--start-spread` seconds, no rows of
an earlier run appended, no symlinks, every meta.json well-typed), and writes a run folder as
`testbed run` does: the ranks' rows merged into Parquet by the same code, and run.json with the
spec, versions and hosts the ranks recorded. Then `testbed report RUN_DIR` reads it like any
run. A line mid-file that is not a row makes the run `partial`, not ok.

A separate verb rather than `testbed report` reading rank folders: a report reads finished
run folders, one or a sweep of them, alongside each other; ingesting writes one once (merging,
checking, putting clocks of several machines on one), after which the folder is an ordinary
run that any later report can take together with others.

What a torchrun run lacks is absent, not invented: no burst schedule (preset `none`, empty
bursts table), no flow paths, no topology; its label says `(torchrun)` and run.json a warning
saying so, so a report never mistakes it for an emulated run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis import schema
from analysis.load import label_of
from testbed.run import results
from testbed.run.rank_meta import IngestError, check_plain_files, read_meta
from testbed.run.summary import merge  # the testbed's own merge, verdict and summary
from workloads.transport.completion import transport_traits

__all__ = ["START_SPREAD_S", "IngestError", "RankDir", "find_rank_dirs", "ingest_job"]

#: A job's ranks are launched together (torchrun on each machine at once): ranks whose starts
#: are further apart than this, s, are taken for two jobs of one spec (`--start-spread`).
START_SPREAD_S = 10.0
#: Time columns of the rank tables, put on rank 0's clock.
TIME_COLUMNS = {"rounds": ("t_start_s", "t_end_s"), "steps": ("t_start_s",), "evals": ("t_s",)}
RANK_DIR = re.compile(r"rank(\d+)")


@dataclass(frozen=True)
class RankDir:
    rank: int
    path: Path
    meta: dict[str, Any]

    @property
    def clock(self) -> str:
        """Ranks with the same key share CLOCK_MONOTONIC (one boot of one machine)."""
        return self.meta.get("boot_id") or self.meta["host"]

    def offset_s(self, ref: RankDir) -> float:
        """What to add to this rank's monotonic times to put them on `ref`'s clock."""
        if self.clock == ref.clock:
            return 0.0
        mine, theirs = self.meta["started"], ref.meta["started"]
        return (mine["realtime_s"] - mine["monotonic_s"]) - (
            theirs["realtime_s"] - theirs["monotonic_s"]
        )


def find_rank_dirs(inputs: list[Path]) -> list[RankDir]:
    """The rank folders under the inputs: each input is a rank folder (`rank<R>/meta.json`)
    or a folder holding some. Nothing in them is followed through a symlink."""
    found = []
    for p in inputs:
        if not p.is_dir():
            raise IngestError(f"{p}: not a folder")
        dirs = [p] if os.path.lexists(p / "meta.json") else sorted(
            d for d in p.iterdir() if RANK_DIR.fullmatch(d.name)
            and (d.is_symlink() or d.is_dir() and os.path.lexists(d / "meta.json"))
        )  # fmt: skip
        if not dirs:
            raise IngestError(f"{p}: no rank folders (rank<R>/meta.json) in it")
        for d in dirs:
            if d.is_symlink():
                raise IngestError(f"{d}: a symlink; ingest follows none (copy the folder itself)")
            check_plain_files(d)
            meta = read_meta(d)
            m = RANK_DIR.fullmatch(d.name)
            if m and int(m.group(1)) != meta["rank"]:
                raise IngestError(
                    f"{d}: folder name says rank {m.group(1)}, meta.json {meta['rank']}"
                )
            found.append(RankDir(int(meta["rank"]), d, meta))
    return sorted(found, key=lambda r: (r.rank, str(r.path)))


def _spec_diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return ", ".join(f"{k} ({a.get(k)!r} vs {b.get(k)!r})" for k in keys)


def check_job(ranks: list[RankDir], start_spread_s: float = START_SPREAD_S) -> None:
    """Raise IngestError naming every way these folders are not one job's ranks."""
    problems = []
    worlds = sorted({r.meta["world"] for r in ranks})
    if len(worlds) > 1:
        says = "; ".join(f"{r.path} says {r.meta['world']}" for r in ranks)
        problems.append(f"the ranks disagree on the world size: {says}")
    world = max(worlds)
    seen: dict[int, list[Path]] = {}
    for r in ranks:
        seen.setdefault(r.rank, []).append(r.path)
    for rank, paths in sorted(seen.items()):
        if len(paths) > 1:
            problems.append(f"rank {rank} given {len(paths)} times: {', '.join(map(str, paths))}")
        if not 0 <= rank < world:
            problems.append(f"rank {rank} ({paths[0]}) is outside world {world}")
    missing = [r for r in range(world) if r not in seen]
    if missing:
        problems.append(
            f"missing rank(s) {', '.join(map(str, missing))} of world {world} "
            f"(copy every machine's rank folders and give them all)"
        )
    ref = ranks[0]
    for r in ranks[1:]:
        if r.meta["spec"] != ref.meta["spec"]:
            problems.append(
                f"rank {r.rank} ({r.path}) ran another spec than rank {ref.rank} ({ref.path}): "
                + _spec_diff(ref.meta["spec"], r.meta["spec"])
            )
        if r.meta["master"] != ref.meta["master"]:
            problems.append(
                f"rank {r.rank} ({r.path}) met at {r.meta['master']}, rank {ref.rank} at "
                f"{ref.meta['master']}: not one rendezvous"
            )
    starts = [r.meta["started"]["realtime_s"] for r in ranks]
    if max(starts) - min(starts) > start_spread_s:
        first = min(ranks, key=lambda r: r.meta["started"]["realtime_s"])
        last = max(ranks, key=lambda r: r.meta["started"]["realtime_s"])
        problems.append(
            f"rank {last.rank} ({last.path}) started {max(starts) - min(starts):.0f} s after "
            f"rank {first.rank} ({first.path}): ranks of one job start within "
            f"{start_spread_s:g} s (--start-spread)"
        )
    if problems:
        raise IngestError("not one torchrun job:\n  - " + "\n  - ".join(problems))


def _rows(rank: RankDir, table: str, torn: list[str]) -> list[dict[str, Any]]:
    """The table's rows of one rank; a line that is not a row, but for a torn last line (a
    killed writer), is named in `torn`."""
    path = rank.path / f"{table}.jsonl"
    bad: list[int] = []
    rows = results.read_jsonl(path, bad)
    torn += [f"{path}:{n}" for n in bad]
    need = (*TIME_COLUMNS[table], *(("step",) if table in ("steps", "evals") else ()))
    for row in rows:
        if not all(isinstance(row.get(c), int | float) for c in need):
            raise IngestError(f"{path}: a row without a number in {', '.join(need)}: {row}")
    key = "step" if table in ("steps", "evals") else None
    if key is not None:
        steps = [row[key] for row in rows]
        if len(set(steps)) != len(steps):
            raise IngestError(
                f"{rank.path}/{table}.jsonl holds a {key} more than once: rows of an earlier "
                f"run were appended to the same --out (give each torchrun job its own --out)"
            )
    return rows


def _expected_steps(rank: RankDir) -> int:
    spec = rank.meta["spec"]
    return int(rank.meta.get("steps_total") or (spec["rounds"] if spec["workload"] == "allreduce"
                                                else 0))  # fmt: skip


def copy_ranks(
    ranks: list[RankDir], run_dir: Path, run_id: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Each rank's folder into run_dir/rank<R>/, its rows re-keyed to run_id and its times put
    on rank 0's clock; returns every rank's steps rows as written, and the lines mid-file that
    were not rows (file:line)."""
    steps: list[dict[str, Any]] = []
    torn: list[str] = []
    for r in ranks:
        dest = run_dir / f"rank{r.rank}"
        shutil.copytree(r.path, dest, symlinks=True)  # none: find_rank_dirs refused them
        offset = r.offset_s(ranks[0])
        for table, cols in TIME_COLUMNS.items():
            if not (r.path / f"{table}.jsonl").exists():
                continue
            rows = [
                {**row, "run_id": run_id} | {c: row[c] + offset for c in cols}
                for row in _rows(r, table, torn)
            ]
            (dest / f"{table}.jsonl").write_text(
                "".join(json.dumps(row, allow_nan=True) + "\n" for row in rows)
            )
            if table == "steps":
                steps += rows
    return steps, torn


def outcome(
    ranks: list[RankDir], steps: list[dict[str, Any]], torn: list[str] = ()
) -> tuple[str, str]:
    """(status, reason): ok when every rank recorded every step of its run and every line
    mid-file was a row; partial when a line mid-file was not (rows are missing in the middle:
    the tables are not the whole run); failed when a rank stopped short."""
    short = []
    for r in ranks:
        n, want = sum(s["rank"] == r.rank for s in steps), _expected_steps(r)
        if n < want:
            short.append(f"rank {r.rank} recorded {n} of {want} steps")
    why = ["the job did not finish: " + "; ".join(short)] if short else []
    if torn:
        more = f" and {len(torn) - 3} more" if len(torn) > 3 else ""
        why.append(f"lines mid-file that are not rows: {', '.join(torn[:3])}{more}")
    return ("failed" if short else "partial" if torn else "ok"), "; ".join(why)


def _spec_hash(spec: dict[str, Any]) -> str:
    """12 hex naming what a torchrun run measured (its worker spec; not an emulated run's)."""
    blob = json.dumps({"launcher": "torchrun", **spec}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _traits(transport: str) -> dict[str, Any]:
    """run.json's transport_traits of the job's transport (IngestError if none has that name)."""
    try:
        return transport_traits(transport).as_dict()
    except ValueError as e:
        raise IngestError(f"rank 0 meta.json: spec.transport: {e}") from None


def run_info(ranks: list[RankDir], run_id: str, status: str, reason: str) -> schema.RunInfo:
    """run.json of the ingested job, from the ranks' meta.json (rank 0's where one is needed)."""
    lead = ranks[0].meta
    spec = dict(lead["spec"])
    hosts = {str(r.rank): r.meta["host"] for r in ranks}
    machines = sorted({r.clock for r in ranks})
    warnings = [
        f"torchrun run: {len(ranks)} ranks on {', '.join(sorted(set(hosts.values())))}, no "
        f"emulated network, so no burst schedule, flow paths or topology are recorded"
    ]
    if len(machines) > 1:
        warnings.append(
            f"ranks on {len(machines)} machines: their times are put on rank 0's clock through "
            f"each rank's wall clock, as exact as the machines' clock sync"
        )
    differ = sorted({k for r in ranks for k, v in r.meta["versions"].items()
                     if lead["versions"].get(k) != v})  # fmt: skip
    if differ:
        warnings.append(f"ranks ran different versions of {', '.join(differ)} (rank 0's shown)")
    return schema.RunInfo(
        run_id=run_id,
        status=status,
        reason=reason,
        workload=spec["workload"],
        transport=spec["transport"],
        transport_traits=_traits(spec["transport"]),
        preset_role="calm",  # a torchrun job plays no bursts
        seed=int(spec.get("seed", 0)),
        spec=spec,
        spec_hash=_spec_hash(spec),
        versions=lead["versions"],
        kernel=lead.get("kernel", ""),
        nproc=int(lead.get("nproc") or 0),
        worker_hosts=hosts,
        warnings=warnings,
        monotonic_anchor_s=lead["started"]["monotonic_s"],
        realtime_anchor_s=lead["started"]["realtime_s"],
    )


def ingest_job(
    inputs: list[Path],
    run_dir: Path,
    label: str | None = None,
    start_spread_s: float = START_SPREAD_S,
) -> schema.RunInfo:
    """Check, copy and merge the rank folders under `inputs` into `run_dir` (new or empty);
    returns the run.json written. Raises IngestError naming what is wrong."""
    if not 0 <= start_spread_s < float("inf"):
        raise IngestError(
            f"--start-spread: must be a finite number of seconds >= 0, not {start_spread_s}"
        )
    ranks = find_rank_dirs(inputs)
    check_job(ranks, start_spread_s)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise IngestError(f"--out {run_dir}: exists and is not empty; give a new folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        steps, torn = copy_ranks(ranks, run_dir, run_dir.name)
        info = run_info(ranks, run_dir.name, *outcome(ranks, steps, torn))
        info.spec["label"] = label or f"{label_of(info)} (torchrun)"
        for name, value in results.transport_fields(run_dir).items():
            setattr(info, name, value)
        if steps:
            info.t0_s = min(s["t_start_s"] for s in steps if s["rank"] == 0)
            end = max(s["t_start_s"] + s["step_ms"] / 1e3 for s in steps)
            info.wall_s = end - min(s["t_start_s"] for s in steps)
        schema.write_run_info(run_dir, info)  # the merge's summary reads it
        merge(info, run_dir)
        info.cpu_pressure = {}  # the merge reads this machine's; the ranks ran elsewhere
        schema.write_run_info(run_dir, info)
    except BaseException as e:
        shutil.rmtree(run_dir, ignore_errors=True)  # no half run folder
        if isinstance(e, schema.SchemaError | KeyError | TypeError):
            raise IngestError(f"the ranks' rows do not fit the tables: {e!r}") from e
        raise
    return info
