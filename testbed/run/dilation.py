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

`--dilation auto` picks D before the run: a short run of the run's own shape under its
preset's control (`calibration_burst`: the bursts' CPU cost without their effect; an all-reduce:
CALIBRATION_ROUNDS rounds of its size; a training run: CALIBRATION_STEPS steps of its model,
batch and workers, since its compute competes with its transport for the cores) at each of
CALIBRATION_DILATIONS, `calibrations()` times each, judged by `analysis.fidelity.judge_run`
with the loop's lateness held to CALIBRATION_LATE_SHARE of the gap. A faithful D is kept only
if AGAINST times its D does not speed its calm rounds up beyond the verdict's margin
(`short_of_cpu`): time dilation changes nothing a faithful run measures (DieCast's premise), so
a D whose calm rounds a larger D makes faster was short of CPU, even when nothing else faults
it (a calibration made while other processes load the machine judges itself against nothing).
The smallest D kept wins (`choose`), and its calm ratio, with the tolerance, becomes the seed's
`Reference`: every later run of the shape and seed, at any D, is judged against it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import schema
from analysis.fidelity import DAMAGE, Fidelity, Reference, tolerance
from workloads.transport.dilation import TimeDilation

__all__ = [
    "CALIBRATIONS_ENV",
    "CALIBRATION_DILATIONS",
    "Calibration",
    "calibration_burst",
    "calibrate",
    "calibrations",
    "reference_at",
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
#: A faithful D is checked against the D this many times larger (or the ladder's top): 4x the
#: CPU per emulated second. Neighbours miss a slope: two busy loops left a calibration at
#: 1.11x its bound at D = 1 and 1.07x at D = 2 (4%, under the 5% margin), while the run at D = 1
#: was 8.3% slower than alone.
AGAINST = 4.0
#: One calibration run: (spec, out_dir) -> (status, run folder or None, reason).
CalibrationRun = Callable[[Any, Path], tuple[str, Path | None, str]]
#: Where a run keeps its calibration runs.
CALIBRATION_DIR = "calibration"
#: How many calibration runs per D: 1 by default (each is a whole short run, and the demo and
#: the test suite calibrate several shapes); 3 or more derive the verdict's tolerance from the
#: shape's own spread instead of the machine's (`analysis.fidelity.tolerance`).
CALIBRATIONS_ENV = "DBLP_TESTBED_CALIBRATIONS"


def calibrations() -> int:
    """$DBLP_TESTBED_CALIBRATIONS, 1 when unset; ValueError naming it when not a count >= 1."""
    raw = os.environ.get(CALIBRATIONS_ENV, "1")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{CALIBRATIONS_ENV}={raw!r}: calibration runs per D, a whole number >= 1")
    return n


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


def calibration_burst(spec: Any, out_dir: Path) -> tuple[str, str]:
    """(the `--burst` calibrations play, what it is): the control of the run's preset
    (`Preset.control`: its windows, its loss rules at probability 0, its incast senders sending
    to idle neighbours), written into `out_dir`, so the calibration pays the CPU the bursts
    cost the run: at D = 1 the demo's burst-free calibration passed while its run under
    `heavy` woke its loop 3.3 ms late at the p95. "none" for a burst-free preset, or one whose
    control the topology cannot play (a sham sender needs an idle neighbour), saying so."""
    from testbed.bursts import presets
    from testbed.run.plan import plan
    from testbed.spec import SpecError

    control = presets.load(spec.burst).control()
    if not control.streams:
        return "none", "without bursts"
    path = Path(out_dir) / f"{control.name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(presets.dump_preset(control))
    try:
        plan(type(spec).model_validate(spec.model_dump() | {"burst": str(path), "dilation": 1.0}))
    except SpecError as e:
        return "none", f"without bursts ({control.name} cannot be played here: {e})"
    return str(path), f"under {control.name} (the bursts' CPU cost without their effect)"


def calibration_spec(spec: Any, dilation: float, repeat: int = 0, burst: str = "none") -> Any:
    """The short run that tells whether `spec` is faithful at `dilation`: a training run's
    first CALIBRATION_STEPS steps (its model, batch, workers, transport and ε schedule), or
    CALIBRATION_ROUNDS rounds of an all-reduce's own size, playing `burst` (the control of its
    preset, `calibration_burst`). Repeats keep the seed (it sets the paths, see `Reference`):
    their spread is the machine's, on the run's own paths."""
    run_id = f"D{dilation:g}" + (f"-{repeat}" if repeat else "")
    common = {"burst": burst, "dilation": dilation, "run_id": run_id, "label": None}
    if spec.workload == "train":
        steps = min(spec.steps or CALIBRATION_STEPS, CALIBRATION_STEPS)
        return type(spec).model_validate(spec.model_dump() | common | {"steps": steps})
    data = spec.model_dump() | common | {"workload": "allreduce", "rounds": CALIBRATION_ROUNDS}
    return type(spec).model_validate(data)


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` found: the D to run at, why, and the shape's reference (None when no D
    was faithful)."""

    dilation: float
    why: str
    reference: Reference | None


def _calm(verdicts: Sequence[Fidelity]) -> list[float]:
    return [v.calm_bound_ratio for v in verdicts if v.calm_bound_ratio is not None]


def _kept(measured: dict[float, list[Fidelity]], rejected: dict[float, str]) -> list[list[float]]:
    """The calm ratios of the faithful, kept dilations (a starved D's spread is the CPU's, not
    the machine's noise)."""
    return [
        _calm(vs)
        for d, vs in measured.items()
        if d not in rejected and all(v.faithful is True for v in vs)
    ]


def _against(dilations: Sequence[float], i: int) -> float | None:
    """The D that checks dilations[i]: the first rung at least AGAINST times larger, else the
    top; None for the top itself."""
    if i + 1 >= len(dilations):
        return None
    return next((d for d in dilations[i + 1 :] if d >= AGAINST * dilations[i]), dilations[-1])


def _suspect(dilations: Sequence[float], i: int, rejected: dict[float, str]) -> bool:
    """Whether dilations[i] needs the short-of-CPU check: the first rung (a calibration there
    has nothing but itself to judge by), or one whose rung below the check rejected (load is
    evident). A D reached because the one below broke a clause outright is taken as is: the
    check costs a calibration at 4D (150 s for the demo's training shape at D = 8); checking
    every rung made the first `make demo` take 15 minutes; measured risk: two busy loops, the
    all-reduce at D = 2 ran its calibrations at 1.07x their bound against 1.02x alone
    (+4.6%)."""
    return i == 0 or dilations[i - 1] in rejected


def short_of_cpu(
    d: float, low: Sequence[Fidelity], high_d: float, high: Sequence[Fidelity], margin: float
) -> str | None:
    """Why D's calm rounds say it was short of CPU: slower than at `high_d` by more than
    `margin`; None when dilating did not speed them up (or there is nothing to compare)."""
    a, b = _calm(low), _calm(high)
    if not a or not b or np.mean(a) <= np.mean(b) * (1 + margin):
        return None
    return (
        f"short of CPU at D={d:g}: calm rounds at {np.mean(a):.2f}x their pacing bound, "
        f"{np.mean(b):.2f}x at D={high_d:g} (more than +{margin:.1%})"
    )


def choose(
    verdicts: Sequence[tuple[float, Sequence[Fidelity]]], rejected: dict[float, str] | None = None
) -> tuple[float, str]:
    """(D, why) from (dilation, its calibrations' verdicts) in increasing D: the smallest whose
    runs were all faithful and that `rejected` (D -> why) does not name, else the largest tried,
    saying what broke there."""
    if not verdicts:
        raise ValueError("no calibration to choose from")
    rejected = rejected or {}

    def state(d: float, vs: Sequence[Fidelity]) -> str:
        ok = sum(v.faithful is True for v in vs)
        if ok < len(vs):
            return f"{len(vs) - ok} of {len(vs)} unfaithful" if len(vs) > 1 else "unfaithful"
        return "short of CPU" if d in rejected else "faithful"

    tried = ", ".join(f"D={d:g} {state(d, vs)}" for d, vs in verdicts)
    for d, vs in verdicts:
        if state(d, vs) == "faithful":
            return d, f"auto: smallest faithful of a calibration ({tried})"
    d, vs = verdicts[-1]
    why = rejected.get(d) or "; ".join(r for v in vs for r in v.reasons) or "unfaithful"
    return d, f"auto: no calibration was faithful ({tried}); the largest, D={d:g}: {why}"


def _runs(
    spec: Any, d: float, out_dir: Path, run: CalibrationRun, repeats: int, burst: str
) -> list[Fidelity]:
    """The verdicts of `repeats` calibration runs at D; RuntimeError naming one that did not
    end ok (a D is never picked, nor a reference set, on a run that did not happen)."""
    from analysis.fidelity import CALIBRATION_LATE_SHARE, judge_run

    verdicts = []
    for r in range(repeats):
        status, run_dir, reason = run(calibration_spec(spec, d, r, burst), out_dir)
        if status != "ok" or run_dir is None:
            raise RuntimeError(f"calibration at D={d:g} {status}: {reason}")
        verdicts.append(judge_run(run_dir, late_share=CALIBRATION_LATE_SHARE))
    return verdicts


def _reference(
    spec: Any, d: float, measured: dict[float, list[Fidelity]], rejected: dict[float, str]
) -> Reference | None:
    """The shape's reference at D from its calibrations (None unless all were faithful)."""
    calm = _calm(measured.get(d, []))
    if not calm or not all(v.faithful is True for v in measured[d]):
        return None
    tol, source = tolerance(_kept(measured, rejected), workload=spec.workload)
    return Reference(d, spec.seed, float(np.mean(calm)), tol, source)


def calibrate(
    spec: Any,
    out_dir: Path,
    run: CalibrationRun,
    dilations: Sequence[float] = CALIBRATION_DILATIONS,
    repeats: int | None = None,
) -> Calibration:
    """Run `calibration_spec(spec, D, r)` `repeats` times (default `calibrations()`) for each D
    in turn (`run(spec, out_dir)` returns status, run folder and reason) until a faithful D that
    the D `_against` it does not find `short_of_cpu` (the top needs no such check); return what
    `choose` picks and the reference it sets."""
    repeats = repeats or calibrations()
    burst, played = calibration_burst(spec, out_dir)
    measured: dict[float, list[Fidelity]] = {}

    def measure(d: float) -> list[Fidelity]:
        if d not in measured:
            measured[d] = _runs(spec, d, out_dir, run, repeats, burst)
        return measured[d]

    rejected: dict[float, str] = {}
    for i, d in enumerate(dilations):
        if not all(v.faithful is True for v in measure(d)):
            continue
        if (high_d := _against(dilations, i)) is None or not _suspect(dilations, i, rejected):
            break
        high = measure(high_d)
        # two means of `repeats` runs each, and never below what counts as damage
        tol = tolerance(_kept(measured, rejected), versus=repeats, workload=spec.workload)[0]
        margin = max(tol, DAMAGE)
        why = short_of_cpu(d, measured[d], high_d, high, margin)
        if why is None:
            break
        rejected[d] = why
    d, why = choose(sorted(measured.items()), rejected)
    return Calibration(d, f"{why}, {played}", _reference(spec, d, measured, rejected))


def reference_at(
    spec: Any, d: float, out_dir: Path, run: CalibrationRun, repeats: int | None = None
) -> Reference | None:
    """The reference of a seed the shape's calibration did not run: `repeats` calibration
    runs at the D the cache holds (no ladder: that D is known)."""
    burst, _ = calibration_burst(spec, out_dir)
    measured = {d: _runs(spec, d, out_dir, run, repeats or calibrations(), burst)}
    return _reference(spec, d, measured, {})


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
