"""Time dilation (DieCast, NSDI'07): the emulated network runs D times slower, and everything
that measures it is scaled back, so a 2-core machine can keep up with what it emulates.

Under dilation D the kernel gets every link rate / D (`shaping.as_played`; incast senders and
squeezes follow the played links), and every duration is D times longer: the burst schedule is
played at t0 + D t (`BurstScheduler(time_scale=)`), TCP's rto_min, the run's progress timeout and
the probes' lengths; the worker applies D to its own (workloads/train.py: pacing rate / D, the
compute stretched to D x, the allreduce interval, t_max, the idle detector's floor, the Gloo
timeout). The spec always holds emulated values. Every one of these conversions, and the
mapping back below, goes through `workloads.transport.dilation.TimeDilation`.

The tables hold emulated (undilated) times: `undilate` maps every timestamp t to
t0 + (t - t0) / D, divides every duration by D and multiplies every rate by D, with one anchor
t0 (the first step, the schedule's t = 0) for every table, so bursts still line up with rounds.
A column's unit is its name's: `*_s` a CLOCK_MONOTONIC timestamp, `*_ms` a duration, `mbps` a
rate (analysis/schema.py); the rest are counts and fractions.

`--dilation auto` picks D before the run: a short run of the run's own shape without bursts
(an all-reduce: CALIBRATION_ROUNDS rounds of its size; a training run: CALIBRATION_STEPS steps of
its model, batch and workers, since its compute competes with its transport for the cores) at
each of CALIBRATION_DILATIONS, judged by `analysis.fidelity.judge_run`; the smallest faithful D
wins (`choose`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import schema
from workloads.transport.dilation import TimeDilation

__all__ = [
    "CALIBRATION_DILATIONS",
    "calibrate",
    "calibration_spec",
    "choose",
    "cost",
    "undilate",
    "undilate_run",
    "unit_of",
]

#: The dilations `auto` tries, smallest first; the largest is also the fallback.
CALIBRATION_DILATIONS = (1.0, 2.0, 4.0, 8.0)
CALIBRATION_ROUNDS = 10
#: A training shape calibrates on this many steps of itself: an all-reduce of its gradient's
#: size passed MNIST-1D training at D = 1, whose calm rounds then ran at 1.55-1.75x their
#: pacing bound with four ranks computing on two cores (unfaithful). 20 steps give 20 calm
#: rounds per rank, the verdict's MIN_CALM_ROUNDS, before the first evaluation of the models here.
CALIBRATION_STEPS = 20
#: Where a run keeps its calibration runs.
CALIBRATION_DIR = "calibration"


def unit_of(column: str) -> str | None:
    """ "timestamp", "duration", "rate", or None (a count, fraction, loss or name)."""
    if column.endswith("_s"):
        return "timestamp"
    if column.endswith("_ms"):
        return "duration"
    if column == "mbps":
        return "rate"
    return None


def undilate(table: str, df: pd.DataFrame, dilation: float, t0: float) -> pd.DataFrame:
    """`df` (a table of the schema) with wall-clock times under `dilation` turned into emulated
    ones: t -> t0 + (t - t0) / D for timestamps, / D for durations, x D for rates. Pure."""
    dil = TimeDilation(dilation)
    out = df.copy()
    if dilation == 1:
        return out
    for col in (c.name for c in schema.TABLES[table] if c.kind == "float"):
        unit = unit_of(col)
        if unit == "timestamp":
            out[col] = dil.emulated_clock(t0, out[col])
        elif unit == "duration":
            out[col] = dil.emulated(out[col])
        elif unit == "rate":
            out[col] = dil.emulated_rate(out[col])
    return out


def undilate_run(run_dir: Path, dilation: float, t0: float) -> list[str]:
    """Rewrite every table the run folder holds in emulated time; returns the tables done."""
    done = []
    for table, name in schema.TABLE_FILES.items():
        if dilation == 1 or not (Path(run_dir) / name).exists():
            continue
        df = schema.read_table(run_dir, table)
        schema.write_table(run_dir, table, undilate(table, df, dilation, t0))
        done.append(table)
    return done


def calibration_spec(spec: Any, dilation: float) -> Any:
    """The short run that tells whether `spec` is faithful at `dilation`, without bursts: a
    training run's first CALIBRATION_STEPS steps (its model, batch, workers, transport and ε
    schedule), or CALIBRATION_ROUNDS rounds of an all-reduce's own size."""
    common = {"burst": "none", "dilation": dilation, "run_id": f"D{dilation:g}", "label": None}
    if spec.workload == "train":
        steps = min(spec.steps or CALIBRATION_STEPS, CALIBRATION_STEPS)
        return type(spec).model_validate(spec.model_dump() | common | {"steps": steps})
    data = spec.model_dump() | common | {"workload": "allreduce", "rounds": CALIBRATION_ROUNDS}
    return type(spec).model_validate(data)


def choose(verdicts: Sequence[tuple[float, Any]]) -> tuple[float, str]:
    """(D, why) from (dilation, Fidelity) pairs in increasing D: the smallest faithful one, else
    the largest tried, saying what broke there."""
    if not verdicts:
        raise ValueError("no calibration to choose from")
    tried = ", ".join(f"D={d:g} {'faithful' if v.faithful else 'unfaithful'}" for d, v in verdicts)
    for d, v in verdicts:
        if v.faithful:
            return d, f"auto: smallest faithful of a calibration ({tried})"
    d, v = verdicts[-1]
    why = "; ".join(v.reasons) or "unfaithful"
    return d, f"auto: no calibration was faithful ({tried}); the largest, D={d:g}: {why}"


def calibrate(
    spec: Any,
    out_dir: Path,
    run: Callable[[Any, Path], tuple[str, Path | None, str]],
    dilations: Sequence[float] = CALIBRATION_DILATIONS,
) -> tuple[float, str]:
    """Run `calibration_spec(spec, D)` for each D in turn (`run(spec, out_dir)` returns status,
    run folder and reason), stopping at the first faithful one; return `choose`'s (D, why).

    A calibration run that does not end ok raises RuntimeError naming it: a D is never picked
    on a run that did not happen."""
    from analysis.fidelity import judge_run

    verdicts = []
    for d in dilations:
        status, run_dir, reason = run(calibration_spec(spec, d), out_dir)
        if status != "ok" or run_dir is None:
            raise RuntimeError(f"calibration at D={d:g} {status}: {reason}")
        verdicts.append((d, judge_run(run_dir)))
        if verdicts[-1][1].faithful:
            break
    return choose(verdicts)


def cost(run_dirs: Sequence[Path]) -> str:
    """What dilation cost a set of runs, for `make demo` / `make bench` to print beside their wall
    time: the D each ran at, how many calibrated, the calibrations' wall time, and the verdicts."""
    from collections import Counter

    from testbed.base.terminal import wall_time

    ds: Counter[float] = Counter()
    calibrated, calib_s, faithful, judged = 0, 0.0, 0, 0
    for run_dir in run_dirs:
        try:
            info = schema.read_run_info(run_dir)
        except (OSError, ValueError):
            continue
        ds[info.dilation] += 1
        judged += info.faithful is not None
        faithful += info.faithful is True
        calib = sorted((Path(run_dir) / CALIBRATION_DIR).glob("*/run.json"))
        calibrated += bool(calib)
        for path in calib:
            try:
                calib_s += schema.read_run_info(path.parent).wall_s or 0.0
            except (OSError, ValueError):
                continue
    each = ", ".join(f"D={d:g} x{n}" for d, n in sorted(ds.items()))
    return (
        f"dilation: {each or 'no runs'}; {calibrated} run(s) calibrated "
        f"({wall_time(calib_s)} of calibration runs); {faithful} of {judged} faithful"
    )
