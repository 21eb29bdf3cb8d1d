"""What a run is, resolved before the machine is touched: topology as played, preset,
worker placement and the seeded burst schedule. Pure; a bad spec fails here, naming its field."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.spec import RunSpec, SpecError
from workloads.spec import WORKER_WORKLOADS
from workloads.transport.config import TransportConfig


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
    server_host: str | None = None  # the parameter server's (--collective ps), apart


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
    server = None
    if spec.workload in WORKER_WORKLOADS:
        if spec.workers > n_hosts:
            raise SpecError(
                "workers", f"{spec.workers} workers but the topology has {n_hosts} hosts"
            )
        hosts = tuple(schedule.place_workers(topo, spec.workers))
        if spec.collective == "ps":
            if spec.workers + 1 > n_hosts:
                raise SpecError(
                    "workers", f"{spec.workers} workers and a parameter server need "
                    f"{spec.workers + 1} hosts; the topology has {n_hosts}",
                )  # fmt: skip
            server = schedule.place_server(topo, spec.workers)
    else:
        hosts = ()
    for field_name, name in (("probe_src", spec.probe_src), ("probe_dst", spec.probe_dst)):
        if name is not None and name not in {h.name for h in topo.hosts}:
            raise SpecError(field_name, f"{name} is not a host of the topology")
    span_s = expected_duration_s(spec) * SCHEDULE_COVERAGE
    if preset.round_aligned and spec.workload not in WORKER_WORKLOADS:
        raise SpecError("burst", f"{preset.name} hits rounds; the {spec.workload} probe has none")
    try:
        presets.check_event_bound(preset, span_s, run_rounds(spec))
        # a parameter server is a receiving host like the workers: its downlink is one of
        # all_worker_downlinks (stage 1's flows cross it) and no incast sender lands on it
        receivers = [*hosts, *([server] if server else [])]
        events = schedule.generate(
            preset, topo, receivers, span_s, spec.seed, rounds=run_rounds(spec),
            control_ports=control_ports(spec, len(receivers)) if spec.control == "tcp" else None,
        )  # fmt: skip
    except ValueError as e:
        raise SpecError("burst", f"{preset.name} on {topo.name}: {e}") from e
    return Plan(spec, topo, preset, hosts, tuple(events), dilation, dilation_reason, server)


def expected_duration_s(spec: RunSpec) -> float:
    """A generous estimate of the measured part (the schedule covers SCHEDULE_COVERAGE x it)."""
    if spec.workload in ("iperf3", "ping"):
        return spec.duration_s
    bound_s = 2 * spec.size_mib * 8 * 1.048576 / spec.bw  # ~2 x S/B per round
    if spec.collective == "ps":
        bound_s *= spec.workers  # the server's link carries N buckets in and N out
    if spec.workload == "allreduce":
        return spec.rounds * (bound_s + spec.interval_ms / 1000)
    steps = spec.steps or spec.epochs * 60
    return steps * max(bound_s, 0.2)


def control_ports(spec: RunSpec, members: int) -> tuple[int, int]:
    """The TCP ports the UDP transports' control links use (`--control tcp`: each member
    listens on its first UDP port), as an inclusive range over every member's ports."""
    per = TransportConfig(base_port=spec.base_port).ports_per_peer
    return spec.base_port, spec.base_port + max(members, 1) * per - 1


def run_rounds(spec: RunSpec) -> int | None:
    """The rounds a worker run has (allreduce: its rounds; train: its steps), for round-aligned
    events; None for a probe."""
    from workloads.datasets import TRAIN_SIZES, steps_per_epoch

    if spec.workload == "allreduce":
        return spec.rounds
    if spec.workload != "train":
        return None
    total = spec.epochs * steps_per_epoch(TRAIN_SIZES[spec.model], spec.workers, spec.batch_size)
    return total if spec.steps is None else min(spec.steps, total)
