"""One run, end to end: spec -> network -> bursts -> workers -> results folder.

The order is the contract of `testbed run`: validate everything before the machine is
touched; then capability probe and mechanism choice, topology, live network (ECMP hash
seed from the run seed), connectivity check, workers placed round-robin across pods,
burst schedule started at rank 0's first training step, progress, merge, revert,
teardown. Every exit path (ok, worker failure, hang, SIGINT, SIGTERM) leaves a run.json
with its status and reason and keeps the rows the workers had written.
"""

from __future__ import annotations

import os
import platform
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from analysis import schema
from testbed.base.sourcetree import source_tree
from testbed.run import execute, results
from testbed.run.autodilation import learn_from
from testbed.run.lifecycle import _CLOSING, _MERGE, _RUN, Interrupted, _Signals, final_status
from testbed.run.plan import Plan, expected_duration_s, plan
from testbed.run.summary import merge
from testbed.spec import RunSpec
from workloads.provenance import versions
from workloads.spec import WORKER_WORKLOADS
from workloads.transport.completion import transport_traits

__all__ = ["Plan", "RunOutcome", "expected_duration_s", "plan", "run_experiment"]


@dataclass
class RunOutcome:
    status: str
    run_dir: Path | None
    summary: dict = field(default_factory=dict)
    reason: str = ""


def run_experiment(
    p: Plan,
    out_root: Path | None = None,
    run_id: str | None = None,
    on_event: Callable[[dict], None] | None = None,
) -> RunOutcome:
    """Run one planned experiment (`plan(spec)` has raised any SpecError before the machine was
    touched); never raises for run-time failures (they land in run.json). SpecError (out or
    run_id) when the run folder cannot be made, before anything is built."""
    with _Signals() as sig:  # from before the run dir exists to after its final run.json
        return _run_signalled(p, sig, out_root, run_id, on_event)


def _run_signalled(
    p: Plan,
    sig: _Signals,
    out_root: Path | None,
    run_id: str | None,
    on_event: Callable[[dict], None] | None,
) -> RunOutcome:
    spec = p.spec
    out_root = Path(out_root or spec.out)
    run_id = run_id or spec.run_id or results.new_run_id(spec.spec_hash())
    run_dir = results.create_run_dir(out_root, run_id)  # SpecError: nothing built yet
    tree = source_tree()
    workers = spec.workload in WORKER_WORKLOADS
    info = schema.RunInfo(
        run_id=run_id,
        status="running",
        workload=spec.workload,
        transport=spec.transport if workers else "",
        transport_traits=transport_traits(spec.transport).as_dict() if workers else {},
        preset=p.preset.name,
        preset_role=p.preset.role,
        preset_hash=p.preset.hash,
        seed=spec.seed,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        versions=versions(),
        git_commit=tree.commit,
        git_dirty=tree.dirty,
        kernel=platform.release(),
        nproc=os.cpu_count() or 0,
        monotonic_anchor_s=time.monotonic(),
        realtime_anchor_s=time.time(),
        worker_hosts={str(r): h for r, h in enumerate(p.worker_hosts)},
    )
    if spec.workers > (os.cpu_count() or 1) and spec.workload in WORKER_WORKLOADS:
        info.oversubscribed = True
        info.warnings.append(f"oversubscribed: {spec.workers} workers on {os.cpu_count()} cores")
    try:
        results.point_last(out_root, run_dir)
    except OSError as e:  # a `last` that is not ours (a folder) must not stop the run
        info.warnings.append(f"{out_root}/last not updated: {e.strerror}")
    schema.write_run_info(run_dir, info)
    emit = on_event or (lambda _e: None)
    started = time.monotonic()
    error: BaseException | None = None
    try:
        try:
            sig.enter(_RUN)
            _execute(p, info, run_dir, emit)
        finally:
            sig.enter(_CLOSING)  # from here on, signals are recorded, not raised
    except BaseException as e:  # noqa: BLE001 - every way out must land in run.json
        error = e
    info.status, info.reason = final_status(error)
    if info.status == "interrupted":
        sig.patience = 0  # a second signal: the user is in a hurry, cut the merge short
    info.wall_s = time.monotonic() - started
    _finish(info, run_dir, sig, error, spec)
    if error is not None and not isinstance(error, Exception | KeyboardInterrupt):
        raise error  # SystemExit and the like go on, run.json final
    return RunOutcome(info.status, run_dir, info.summary, info.reason)


def _calibration_run(spec: RunSpec, out_dir: Path) -> tuple[str, Path | None, str]:
    """One calibration run of `--dilation auto`, a whole run in `out_dir`; a signal that
    interrupted it interrupts the run that asked for it."""
    outcome = run_experiment(plan(spec), out_root=out_dir)
    if outcome.status == "interrupted":
        name = outcome.reason.removeprefix("received ").split(" ")[0]
        raise Interrupted(getattr(signal.Signals, name, signal.SIGINT))
    return outcome.status, outcome.run_dir, outcome.reason


def _execute(p: Plan, info: schema.RunInfo, run_dir: Path, emit: Callable[[dict], None]) -> None:
    """The run's machine part; its `--dilation auto` calibrations are whole runs like this one."""
    execute.execute(p, info, run_dir, emit, _calibration_run)


def _finish(
    info: schema.RunInfo,
    run_dir: Path,
    sig: _Signals,
    error: BaseException | None,
    spec: RunSpec,
) -> None:
    """Merge, judge, summarize; run.json is written whatever happened before, with a final
    status that counts a signal that arrived meanwhile."""
    try:
        try:
            sig.enter(_MERGE)
            merge(info, run_dir)
        finally:
            sig.enter(_CLOSING)
    except Interrupted as e:
        info.warnings.append(f"merge cut short by {e}: the tables may miss rows the ranks wrote")
    except Exception as e:  # noqa: BLE001 - keep run.json even if merging failed
        info.warnings.append(f"merge/summary failed: {type(e).__name__}: {e}")
    info.status, info.reason = final_status(error, sig.close())
    if info.summary:
        info.summary["status"] = info.status
    learn_from(spec, info)
    schema.write_run_info(run_dir, info)
