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
import queue
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from analysis import fidelity, schema
from testbed.base.signals import Handlers
from testbed.run import dilation_cache, results, validity
from testbed.run.dilation import CALIBRATION_DILATIONS, CALIBRATION_DIR, calibrate, undilate_run
from testbed.run.launch import Placement, WorkerGroup, worker_argv, write_worker_spec
from testbed.spec import RunSpec, SpecError
from workloads.provenance import versions
from workloads.spec import WORKER_WORKLOADS

REPO = Path(__file__).resolve().parents[2]
PING_TIMEOUT_S = 2
IDLE_LINK_FRACTION = 0.8  # of the configured rate, TCP goodput over one second


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM during a run; `signum` says which. A KeyboardInterrupt (like
    `network.Terminated`), so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


@dataclass
class RunOutcome:
    status: str
    run_dir: Path | None
    summary: dict = field(default_factory=dict)
    reason: str = ""


@dataclass(frozen=True)
class Plan:
    """What was resolved from the spec before anything touched the machine."""

    spec: RunSpec
    topo: object
    preset: object
    worker_hosts: tuple[str, ...]
    events: tuple = ()  # the burst schedule, seconds after t0 (emulated)
    dilation: float | None = 1.0  # None: `auto`, calibrated when the run starts
    dilation_reason: str = "given"


#: The burst schedule covers this many times the run's expected length.
SCHEDULE_COVERAGE = 3


def plan(spec: RunSpec, dilation: float | None = None, dilation_reason: str = "given") -> Plan:
    """Resolve topology, preset, placement and the burst schedule; raise SpecError naming the
    field. No side effects: whatever a bad spec would break, it breaks here.

    The topology is the one played (`shaping.as_played`: rates / D, queues at the MTU), so
    incast rates follow it; event times stay emulated (the scheduler stretches them). With
    `dilation` None the spec's is used; `auto` plans at D = 1 and leaves D to the calibration.
    """
    from testbed.bursts import presets, schedule
    from testbed.network.shaping import as_played

    if dilation is None and spec.dilation != "auto":
        dilation = spec.dilation
    topo = as_played(spec.topology(), spec.mtu, dilation or 1.0)
    try:
        preset = presets.load(spec.burst)
    except (ValueError, KeyError, OSError) as e:
        raise SpecError("burst", str(e)) from e
    n_hosts = len(topo.hosts)
    if spec.workload in WORKER_WORKLOADS:
        if spec.workers > n_hosts:
            raise SpecError(
                "workers", f"{spec.workers} workers but the topology has {n_hosts} hosts"
            )
        hosts = tuple(schedule.place_workers(topo, spec.workers))
    else:
        hosts = ()
    for field_name, name in (("probe_src", spec.probe_src), ("probe_dst", spec.probe_dst)):
        if name is not None and name not in {h.name for h in topo.hosts}:
            raise SpecError(field_name, f"{name} is not a host of the topology")
    span_s = expected_duration_s(spec) * SCHEDULE_COVERAGE
    try:
        presets.check_event_bound(preset, span_s)
        events = schedule.generate(preset, topo, list(hosts), span_s, spec.seed)
    except ValueError as e:
        raise SpecError("burst", f"{preset.name} on {topo.name}: {e}") from e
    return Plan(spec, topo, preset, hosts, tuple(events), dilation, dilation_reason)


def _git() -> tuple[str, bool]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=5
        ).stdout.strip()

    try:
        return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.TimeoutExpired):
        return "", False


def expected_duration_s(spec: RunSpec) -> float:
    """A generous estimate of the measured part (the schedule covers SCHEDULE_COVERAGE x it)."""
    if spec.workload in ("iperf3", "ping"):
        return spec.duration_s
    bound_s = 2 * spec.size_mib * 8 * 1.048576 / spec.bw  # ~2 x S/B per round
    if spec.workload == "allreduce":
        return spec.rounds * (bound_s + spec.interval_ms / 1000)
    steps = spec.steps or spec.epochs * 60
    return steps * max(bound_s, 0.2)


def signal_name(exc: BaseException) -> str | None:
    """The signal an exception stands for, or None: `Interrupted` and `network.Terminated`
    carry theirs (`signum`); a bare KeyboardInterrupt is Python's own SIGINT."""
    if not isinstance(exc, KeyboardInterrupt):
        return None
    return signal.Signals(getattr(exc, "signum", signal.SIGINT)).name


def _failure(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, RunFailed) else f"{type(exc).__name__}: {exc}"


def final_status(error: BaseException | None, late: int | None = None) -> tuple[str, str]:
    """(status, reason) of a run, from what ended its execution (`error`, None if it returned)
    and the first signal that came after it, while the results were merged (`late`). Pure.

    - A signal in `error`'s chain (the exceptions raised while handling others): interrupted,
      named after the first signal (the deepest); a failure it interrupted is kept in the reason.
    - A late signal: interrupted as well (the run did not end on its own terms, and a sweep
      must stop); the reason says how the workload itself had ended.
    - Otherwise a failure is failed, and nothing is ok.
    """
    chain: list[BaseException] = []
    while error is not None and len(chain) < 64 and all(error is not e for e in chain):
        chain.append(error)
        error = error.__context__ or error.__cause__
    hit = [i for i, e in enumerate(chain) if signal_name(e)]
    if hit:
        reason = f"received {signal_name(chain[hit[-1]])}"
        before = [e for e in chain[hit[-1] + 1 :] if not signal_name(e)]
        if before:
            reason += f" after a failure: {_failure(before[0])}"
        return "interrupted", reason
    status, reason = ("failed", _failure(chain[0])) if chain else ("ok", "")
    if late is not None:
        ended = f"failed: {reason}" if chain else "finished ok"
        when = "while merging the results"
        return "interrupted", f"received {signal.Signals(late).name} {when} (the run had {ended})"
    return status, reason


# the phases of a run, as `_Signals` sees them
_SETUP, _RUN, _UNWIND = "setup", "run", "unwind"
_CLOSING, _MERGE, _WRITE = "closing", "merge", "write"
_LATE = (_CLOSING, _MERGE, _WRITE)  # after the run's execution ended


class _Signals(Handlers):
    """SIGINT/SIGTERM over the whole of `run_experiment` (main thread only), by phase:

    setup    recorded: the run dir and its first run.json are made whole; `enter(_RUN)` raises
    run      the first signal raises `Interrupted` (the network defers its own while it is built
             or torn down, then raises `network.Terminated` or KeyboardInterrupt)
    unwind   recorded only, while the interrupted run unwinds
    closing  recorded only: from the end of the execution to the final run.json, a signal never
             raises, so run.json always gets a final status; the run ends interrupted (`late`)
    merge    the same, but for a signal beyond the run's first: that one cuts the merge short
    write    recorded only; the final status is fixed (`close`): such a signal is handed on, on
             exit, to the handler outside the run
    A raise leaves the raising phase at once, so a raise can only happen where it is caught.
    """

    def __init__(self) -> None:
        super().__init__()
        self.phase = _SETUP
        self.received: list[tuple[str, int]] = []  # (phase, signum), in arrival order
        self.patience = 1  # late signals the merge absorbs before one cuts it short
        self._accounted = 0  # received[:_accounted] are reflected in the run's status

    def __enter__(self) -> _Signals:
        super().__enter__()
        return self

    def _unhandled(self) -> int | None:
        rest = self.received[self._accounted :]
        return rest[0][1] if rest else None

    def _handle(self, signum: int, _frame: object) -> None:
        self.received.append((self.phase, signum))
        if self.phase == _RUN:
            self.phase = _UNWIND
            raise Interrupted(signum)
        if self.phase == _MERGE and self.patience <= 0:
            self.phase = _CLOSING
            raise Interrupted(signum)
        if self.phase in (_CLOSING, _MERGE):
            self.patience -= 1

    def enter(self, phase: str) -> None:
        self.phase = phase
        if phase == _RUN and self.received:  # a signal during setup: the run ends before it starts
            self.phase = _UNWIND
            raise Interrupted(self.received[0][1])

    def close(self) -> int | None:
        """Fix the signals the final status reflects; return the first late one (or None)."""
        self.phase = _WRITE
        n = len(self.received)
        self._accounted = n
        return next((signum for ph, signum in self.received[:n] if ph in _LATE), None)


def run_experiment(
    p: Plan,
    out_root: Path | None = None,
    run_id: str | None = None,
    on_event: Callable[[dict], None] | None = None,
) -> RunOutcome:
    """Run one planned experiment (`plan(spec)` has raised any SpecError before the machine was
    touched); never raises for run-time failures (they land in run.json)."""
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
    out_root.mkdir(parents=True, exist_ok=True)
    run_dir = results.create_run_dir(out_root, run_id)
    commit, dirty = _git()
    info = schema.RunInfo(
        run_id=run_id,
        status="running",
        workload=spec.workload,
        transport=spec.transport if spec.workload in WORKER_WORKLOADS else "",
        preset=p.preset.name,
        preset_hash=p.preset.hash,
        seed=spec.seed,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        versions=versions(),
        git_commit=commit,
        git_dirty=dirty,
        kernel=platform.release(),
        nproc=os.cpu_count() or 0,
        monotonic_anchor_s=time.monotonic(),
        realtime_anchor_s=time.time(),
        worker_hosts={str(r): h for r, h in enumerate(p.worker_hosts)},
    )
    if spec.workers > (os.cpu_count() or 1) and spec.workload in WORKER_WORKLOADS:
        info.oversubscribed = True
        info.warnings.append(f"oversubscribed: {spec.workers} workers on {os.cpu_count()} cores")
    results.point_last(out_root, run_dir)
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


class RunFailed(RuntimeError):
    """A worker died, hung, or the network could not carry the run."""


def _calibration_run(spec: RunSpec, out_dir: Path) -> tuple[str, Path | None, str]:
    """One calibration run of `--dilation auto`, a whole run in `out_dir`; a signal that
    interrupted it interrupts the run that asked for it."""
    outcome = run_experiment(plan(spec), out_root=out_dir)
    if outcome.status == "interrupted":
        name = outcome.reason.removeprefix("received ").split(" ")[0]
        raise Interrupted(getattr(signal.Signals, name, signal.SIGINT))
    return outcome.status, outcome.run_dir, outcome.reason


def _auto_dilation(
    spec: RunSpec, run_dir: Path, info: schema.RunInfo, emit: Callable[[dict], None]
) -> tuple[float, str]:
    """`--dilation auto`: the D this machine's cache holds for the spec's shape, else the
    smallest faithful D of a calibration (above any D a run of this shape failed at), which
    the cache then keeps."""
    where = dilation_cache.cache_path()
    entry = dilation_cache.lookup(spec)
    if entry is not None and entry.dilation is not None:
        return entry.dilation, f"auto: cached for this machine and shape ({entry.at}: {entry.why})"
    ladder = entry.dilations() if entry is not None else CALIBRATION_DILATIONS
    emit({"event": "phase", "what": "calibrating the time dilation (--dilation auto; "
          f"once per machine and network shape, kept in {where})"})  # fmt: skip
    d, why = calibrate(spec, run_dir / CALIBRATION_DIR, _calibration_run, ladder)
    if entry is not None:
        why += f"; above D={entry.floor:g}, where {entry.why}"
    try:
        dilation_cache.remember(spec, d, why)
    except OSError as e:
        info.warnings.append(
            f"dilation cache {where} not written ({e.strerror}): the next auto run calibrates again"
        )
    return d, why


def _learn_from(spec: RunSpec, info: schema.RunInfo) -> None:
    """An auto run that ended unfaithful at its D: the shape's next auto run calibrates above."""
    if spec.dilation != "auto" or info.status != "ok" or info.faithful is not False:
        return
    why = "; ".join((info.fidelity or {}).get("reasons") or []) or "unfaithful"
    try:
        dilation_cache.distrust(spec, info.dilation, why)
        note = "the next auto run of this shape calibrates above it"
    except OSError as e:
        note = f"the cache was not written ({e.strerror})"
    info.warnings.append(f"dilation auto: D={info.dilation:g} was unfaithful here; {note}")
    if info.summary:
        info.summary["warnings"] = list(info.warnings)


def _execute(p: Plan, info: schema.RunInfo, run_dir: Path, emit: Callable[[dict], None]) -> None:
    from testbed.base import capabilities
    from testbed.bursts.impairments import choose_impairment
    from testbed.bursts.scheduler import BurstScheduler
    from testbed.network.live import live_network

    spec = p.spec
    caps = capabilities.probe()
    info.capabilities = caps.to_dict()
    backend, why = choose_impairment(spec.impair, caps)
    info.impairment_backend, info.impairment_reason = backend, why
    if p.dilation is None:
        p = plan(spec, *_auto_dilation(spec, run_dir, info, emit))
    d = p.dilation
    info.dilation, info.dilation_reason = d, p.dilation_reason
    emit({"event": "phase", "what": f"network up ({p.topo.name}, impairment {backend})"})
    with live_network(
        p.topo, seed=spec.seed, tcp_rto_min_ms=spec.tcp_rto_min_ms * d, mtu=spec.mtu
    ) as net:
        info.sysctls = dict(getattr(net, "sysctls", {}) or {})
        _check_connectivity(net, p.worker_hosts or tuple(h.name for h in p.topo.hosts[:2]))
        info.capabilities["network_notes"] = list(getattr(net, "notes", []))
        if spec.workload in WORKER_WORKLOADS and spec.transport != "tcp":
            info.flow_paths = _flow_paths(net, p.worker_hosts, spec.base_port)
        if len(p.worker_hosts) >= 2:
            _check_idle_link(net, p.worker_hosts, spec.bw, info, d)
        sched = BurstScheduler(net, list(p.events), backend, info.run_id, time_scale=d)
        sched.prepare()
        hosts = p.worker_hosts
        before = {h: _tcp_counters(net, h) for h in hosts}
        bursts_rows: list[dict] = []
        try:
            if spec.workload in WORKER_WORKLOADS:
                _run_workers(p, net, sched, info, run_dir, emit)
            else:
                _run_probe(p, net, sched, info, run_dir, emit)
        finally:
            bursts_rows = sched.stop()
            schema.write_table(run_dir, "bursts", bursts_rows)
            info.tcp_counters = {
                h: validity.counter_delta(before[h], _tcp_counters(net, h)) for h in hosts
            }
            emit({"event": "phase", "what": "bursts reverted, network down"})


def _check_connectivity(net, hosts: tuple[str, ...]) -> None:
    """Every worker reaches every other (one ARP warm-up try, then a real one)."""
    for src in hosts:
        for dst in hosts:
            if src == dst:
                continue
            ip = net.topo.host_ip(dst)
            argv = ["ping", "-c1", "-W", str(PING_TIMEOUT_S), ip]
            for attempt in range(3):
                try:
                    net.exec(src, argv, timeout=PING_TIMEOUT_S + 3)
                    break
                except Exception as e:  # noqa: BLE001 - KernelError or timeout; retry then fail
                    if attempt == 2:
                        raise RunFailed(f"connectivity check: {src} cannot reach {dst}: {e}") from e


def _flow_paths(net, hosts: tuple[str, ...], base_port: int) -> list[dict]:
    """The UDP transport's flows (ports fixed by rank) and the path ECMP gives each."""
    from testbed.network import flowpaths
    from workloads.transport.config import TransportConfig

    per_peer = TransportConfig.ports_per_peer
    return flowpaths.trace(net, flowpaths.udp_flows(hosts, base_port, per_peer))


def _check_idle_link(
    net, hosts: tuple[str, ...], bw: float, info: schema.RunInfo, dilation: float = 1.0
) -> None:
    """One (emulated) second of iperf3 between two workers before any burst: a starved emulator
    shows here as a calm link that cannot carry its configured rate (emulated Mbit/s)."""
    from testbed.network import netcheck

    played = netcheck.iperf3(net, hosts[0], hosts[1], seconds=dilation)
    info.idle_link_mbps = round(played * dilation, 2)
    if info.idle_link_mbps < IDLE_LINK_FRACTION * bw:
        info.warnings.append(
            f"link under-delivering when idle: {hosts[0]}->{hosts[1]} carried "
            f"{info.idle_link_mbps:.1f} of {bw:g} Mbit/s"
        )


def _tcp_counters(net, host: str) -> dict[str, int]:
    try:
        netstat = net.exec(host, ["cat", "/proc/net/netstat"], timeout=5)
        snmp = net.exec(host, ["cat", "/proc/net/snmp"], timeout=5)
    except Exception:  # noqa: BLE001 - counters are diagnostics, never a reason to fail
        return {}
    return validity.parse_tcp_counters(netstat, snmp)


def _run_workers(p: Plan, net, sched, info: schema.RunInfo, run_dir: Path, emit) -> None:
    spec = p.spec
    placement = Placement(p.worker_hosts, tuple(net.topo.host_ip(h) for h in p.worker_hosts))
    env = dict(os.environ, OMP_NUM_THREADS=str(spec.threads), PYTHONUNBUFFERED="1")
    spec_file = write_worker_spec(spec, run_dir, p.dilation)
    timeout_s = spec.timeout_s * p.dilation
    procs = []
    for rank, host in enumerate(placement.hosts):
        argv = worker_argv(spec_file, placement, rank, run_dir, info.run_id)
        proc = net.node(host).popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=str(REPO),
            env=env,
        )
        net.register_process(proc, f"worker rank {rank}")
        procs.append(proc)
    group = WorkerGroup(procs, run_dir)
    group.start_readers()
    names = ", ".join(placement.hosts)
    emit({"event": "phase", "what": f"{len(procs)} workers started on {names}"})
    last_progress = time.monotonic()
    try:
        while True:
            try:
                ev = group.events.get(timeout=0.2)
            except queue.Empty:
                ev = None
            if ev is not None:
                last_progress = time.monotonic()
                if ev.get("event") == "t0":
                    info.t0_s = float(ev["t_s"])
                    sched.start(info.t0_s)
                emit(ev)
                continue
            failed = group.failed()
            if failed:
                rank, code = failed
                raise RunFailed(f"worker rank {rank} exited with code {code}:\n{group.tail(rank)}")
            if group.all_done():
                break
            if time.monotonic() - last_progress > timeout_s:
                raise RunFailed(f"no progress from the workers for {timeout_s:.0f} s")
    finally:
        group.stop()
        for name, value in results.transport_fields(run_dir).items():
            setattr(info, name, value)


def _run_probe(p: Plan, net, sched, info: schema.RunInfo, run_dir: Path, emit) -> None:
    from testbed.run import probes

    spec = p.spec
    hosts = [h.name for h in p.topo.hosts]
    src = spec.probe_src or hosts[0]
    dst = spec.probe_dst or hosts[-1]
    what = f"{spec.workload} probe {src} -> {dst} for {spec.duration_s}s"
    emit({"event": "phase", "what": what})
    rows = probes.run_probe(
        net, sched, spec.workload, src, dst, spec.duration_s, run_id=info.run_id, run_dir=run_dir,
        time_scale=p.dilation,
    )  # fmt: skip
    info.t0_s = getattr(sched, "t0", None)
    schema.write_table(run_dir, "probes", rows)


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
            _merge(info, run_dir)
        finally:
            sig.enter(_CLOSING)
    except Interrupted as e:
        info.warnings.append(f"merge cut short by {e}: the tables may miss rows the ranks wrote")
    except Exception as e:  # noqa: BLE001 - keep run.json even if merging failed
        info.warnings.append(f"merge/summary failed: {type(e).__name__}: {e}")
    info.status, info.reason = final_status(error, sig.close())
    if info.summary:
        info.summary["status"] = info.status
    _learn_from(spec, info)
    schema.write_run_info(run_dir, info)


def _merge(info: schema.RunInfo, run_dir: Path) -> None:
    results.merge_rank_tables(run_dir)
    t0 = info.t0_s if info.t0_s is not None else info.monotonic_anchor_s
    undilate_run(run_dir, info.dilation, t0)
    rounds = schema.read_table(run_dir, "rounds")
    verdict = fidelity.judge(rounds, schema.read_table(run_dir, "bursts"), info)
    info.faithful, info.fidelity = verdict.faithful, verdict.as_dict()
    info.warnings += [f"unfaithful: {why}" for why in verdict.reasons]
    info.cpu_pressure = validity.read_cpu_pressure()
    info.summary = _summary(info, run_dir)


def _summary(info: schema.RunInfo, run_dir: Path) -> dict:
    from analysis import tables

    s = dict(tables.summary(run_dir))
    steps = schema.read_table(run_dir, "steps")
    s["steps"] = int(steps["step"].max() + 1) if not steps.empty else 0
    if info.workload in ("iperf3", "ping"):
        s.update(_probe_summary(run_dir, info.t0_s or 0.0))
    s.update(
        status=info.status,
        run_dir=str(run_dir),
        wall_s=round(info.wall_s or 0.0, 2),
        warnings=list(info.warnings),
        faithful=info.faithful,
        fidelity=info.fidelity,
        dilation=info.dilation,
        cpu_ms_per_mib=info.cpu_ms_per_mib,
    )
    return s


def _probe_summary(run_dir: Path, t0: float) -> dict:
    """Per-bin throughput / loss / RTT beside burst membership, and their means in vs out."""
    from analysis.windows import in_burst

    probes = schema.read_table(run_dir, "probes")
    if probes.empty:
        return {"bins": []}
    probes = probes.assign(in_burst=in_burst(probes, schema.read_table(run_dir, "bursts")))

    def mean(col: str, inside: bool) -> float | None:
        v = probes.loc[probes["in_burst"] == inside, col].mean()
        return None if v != v else round(float(v), 3)

    bins = [
        {
            "t_s": round(r.t_start_s - t0, 3),
            "mbps": round(r.mbps, 2),
            "loss": round(r.loss, 4),
            "rtt_ms": None if r.rtt_ms != r.rtt_ms else round(r.rtt_ms, 3),
            "in_burst": bool(r.in_burst),
        }
        for r in probes.itertuples()
    ]
    return {
        "bins": bins,
        "mbps_in_burst": mean("mbps", True),
        "mbps_no_burst": mean("mbps", False),
        "loss_in_burst": mean("loss", True),
        "loss_no_burst": mean("loss", False),
        "rtt_ms_in_burst": mean("rtt_ms", True),
        "rtt_ms_no_burst": mean("rtt_ms", False),
    }
