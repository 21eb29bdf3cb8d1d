"""The part of a run that touches the machine: capabilities and the impairment backend, the
live network and its checks, the burst scheduler, then the workers or the probe; the bursts
are reverted and the network torn down on every way out."""

from __future__ import annotations

import os
import queue
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from analysis import schema
from testbed.run import results, validity
from testbed.run.autodilation import CalibrationRun, auto_dilation, cached_reference
from testbed.run.launch import (
    Placement,
    WorkerGroup,
    server_argv,
    worker_argv,
    write_worker_spec,
)
from testbed.run.lifecycle import RunFailed
from testbed.run.plan import Plan, plan
from workloads.spec import WORKER_WORKLOADS
from workloads.transport.dilation import TimeDilation

REPO = Path(__file__).resolve().parents[2]
PING_TIMEOUT_S = 2
IDLE_LINK_FRACTION = 0.8  # of the configured rate, TCP goodput over one second


def execute(
    p: Plan,
    info: schema.RunInfo,
    run_dir: Path,
    emit: Callable[[dict], None],
    calibration_run: CalibrationRun,
) -> None:
    from testbed.base import capabilities
    from testbed.bursts.impairments import choose_impairment
    from testbed.bursts.rounds import SOCKET_NAME
    from testbed.bursts.scheduler import BurstScheduler
    from testbed.network.live import live_network

    spec = p.spec
    caps = capabilities.probe()
    info.capabilities = caps.to_dict()
    backend, why = choose_impairment(spec.impair, caps)
    info.impairment_backend, info.impairment_reason = backend, why
    if p.dilation is None:
        p = plan(spec, *auto_dilation(spec, run_dir, info, emit, calibration_run))
    elif spec.workload in WORKER_WORKLOADS:
        cached_reference(spec, info)
    d = p.dilation
    info.dilation, info.dilation_reason = d, p.dilation_reason
    emit({"event": "phase", "what": f"network up ({p.topo.name}, impairment {backend})"})
    dil = TimeDilation(d)
    with live_network(
        p.topo, seed=spec.seed, tcp_rto_min_ms=dil.played(spec.tcp_rto_min_ms), mtu=spec.mtu
    ) as net:
        info.sysctls = dict(getattr(net, "sysctls", {}) or {})
        members = p.worker_hosts + ((p.server_host,) if p.server_host else ())
        _check_connectivity(net, members or tuple(h.name for h in p.topo.hosts[:2]))
        info.capabilities["network_notes"] = list(getattr(net, "notes", []))
        if spec.workload in WORKER_WORKLOADS and spec.transport != "tcp":
            info.flow_paths = _flow_paths(net, members, spec.base_port)  # the server: rank N
        if len(p.worker_hosts) >= 2:
            _check_idle_link(net, p.worker_hosts, spec.bw, info, d)
        sched = BurstScheduler(net, list(p.events), backend, info.run_id, time_scale=d)
        sched.prepare()
        if p.preset.round_aligned:  # the ranks signal their rounds to the player
            sched.serve_rounds(net.state.path / SOCKET_NAME, len(p.worker_hosts))
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

    dil = TimeDilation(dilation)
    mbps = netcheck.iperf3(net, hosts[0], hosts[1], seconds=dil.played(1.0))
    info.idle_link_mbps = round(dil.emulated_rate(mbps), 2)
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
    server = p.server_host
    placement = Placement(
        p.worker_hosts,
        tuple(net.topo.host_ip(h) for h in p.worker_hosts),
        server,
        net.topo.host_ip(server) if server else None,
    )
    env = dict(os.environ, OMP_NUM_THREADS=str(spec.threads), PYTHONUNBUFFERED="1")
    if sched.round_socket is not None:
        from testbed.bursts.rounds import SOCKET_ENV

        env[SOCKET_ENV] = str(sched.round_socket)
    spec_file = write_worker_spec(spec, run_dir, p.dilation)
    timeout_s = TimeDilation(p.dilation).played(spec.timeout_s)
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
    ps = None
    if server is not None:  # after the workers: it joins through rank 0's rendezvous store
        argv = server_argv(spec_file, placement, run_dir, info.run_id)
        ps = net.node(server).popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, cwd=str(REPO), env=env)  # fmt: skip
        net.register_process(ps, "parameter server")
    group = WorkerGroup(procs, run_dir, ps)
    group.start_readers()
    names = ", ".join(placement.hosts)
    also = f", the parameter server on {server}" if server else ""
    emit({"event": "phase", "what": f"{len(procs)} workers started on {names}{also}"})
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
                who = "the parameter server" if rank == len(procs) else f"worker rank {rank}"
                raise RunFailed(f"{who} exited with code {code}:\n{group.tail(rank)}")
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
