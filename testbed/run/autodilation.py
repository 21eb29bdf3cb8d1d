"""`--dilation auto`: the D a run of this shape needs on this machine, from the cache or a
calibration (whole runs at rising D), and what an unfaithful auto run teaches the cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from analysis import schema
from testbed.run import dilation_cache
from testbed.run.dilation import (
    CALIBRATION_DILATIONS,
    CALIBRATION_DIR,
    CalibrationRun,
    calibrate,
    reference_at,
)
from testbed.spec import RunSpec

__all__ = ["CalibrationRun", "auto_dilation", "cached_reference", "learn_from"]


def _unwritten(where: Path, e: OSError) -> str:
    return f"dilation cache {where} not written ({e.strerror}): the next auto run calibrates again"


def auto_dilation(
    spec: RunSpec,
    run_dir: Path,
    info: schema.RunInfo,
    emit: Callable[[dict], None],
    calibration_run: CalibrationRun,
) -> tuple[float, str]:
    """`--dilation auto`: the D this machine's cache holds for the spec's shape, else the
    smallest faithful D of a calibration (above any D a run of this shape failed at), which
    the cache then keeps with the seed's fidelity reference (set in `info.calibration`; a seed
    the cache has no reference for measures one at the cached D)."""
    where = dilation_cache.cache_path()
    entry = dilation_cache.lookup(spec)
    out_dir = run_dir / CALIBRATION_DIR
    if entry is not None and entry.dilation is not None:
        d, why = (
            entry.dilation,
            f"auto: cached for this machine and shape ({entry.at}: {entry.why})",
        )
        if (ref := entry.reference(spec.seed)) is None:
            emit({"event": "phase", "what": f"measuring seed {spec.seed}'s fidelity reference "
                  f"at the cached D={d:g} (once per machine, shape and seed)"})  # fmt: skip
            found = reference_at(spec, d, out_dir, calibration_run)
            ref = found.as_dict() if found else None
            if ref:
                try:
                    dilation_cache.add_reference(spec, ref)
                except OSError as e:
                    info.warnings.append(_unwritten(where, e))
        info.calibration = ref or {}
        return d, why
    ladder = entry.dilations() if entry is not None else CALIBRATION_DILATIONS
    emit({"event": "phase", "what": "calibrating the time dilation (--dilation auto; "
          f"once per machine and network shape, kept in {where})"})  # fmt: skip
    found = calibrate(spec, out_dir, calibration_run, ladder)
    why = found.why
    if entry is not None:
        why += f"; above D={entry.floor:g}, where {entry.why}"
    reference = found.reference.as_dict() if found.reference else None
    info.calibration = reference or {}
    try:
        dilation_cache.remember(spec, found.dilation, why, reference=reference)
    except OSError as e:
        info.warnings.append(_unwritten(where, e))
    return found.dilation, why


def cached_reference(spec: RunSpec, info: schema.RunInfo) -> None:
    """A run at an explicit D is judged against its shape and seed's reference too, when this
    machine has measured one (time dilation changes nothing a faithful run measures)."""
    entry = dilation_cache.lookup(spec)
    info.calibration = (entry.reference(spec.seed) if entry is not None else None) or {}


def learn_from(spec: RunSpec, info: schema.RunInfo) -> None:
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
