"""After the run: merge the ranks' tables, map dilated time back, judge fidelity, and build
the summary run.json and `testbed run` print (shared with `testbed ingest`)."""

from __future__ import annotations

from pathlib import Path

from analysis import fidelity, schema
from testbed.run import results, validity
from testbed.run.dilation import undilate_run


def merge(info: schema.RunInfo, run_dir: Path) -> None:
    results.merge_rank_tables(run_dir)
    t0 = info.t0_s if info.t0_s is not None else info.monotonic_anchor_s
    undilate_run(run_dir, info.dilation, t0)
    rounds = schema.read_table(run_dir, "rounds")
    verdict = fidelity.judge(rounds, schema.read_table(run_dir, "bursts"), info)
    info.faithful, info.fidelity = verdict.faithful, verdict.as_dict()
    info.warnings += [f"unfaithful: {why}" for why in verdict.reasons]
    info.cpu_pressure = validity.read_cpu_pressure()
    info.summary = run_summary(info, run_dir)


def run_summary(info: schema.RunInfo, run_dir: Path) -> dict:
    from analysis import tables

    s = dict(tables.summary(run_dir))
    steps = schema.read_table(run_dir, "steps")
    s["steps"] = int(steps["step"].max() + 1) if not steps.empty else 0
    if info.workload in ("iperf3", "ping"):
        s.update(probe_summary(run_dir, info.t0_s or 0.0))
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


def probe_summary(run_dir: Path, t0: float) -> dict:
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
