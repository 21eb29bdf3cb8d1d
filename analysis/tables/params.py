"""What each run's transport played by, from run.json (mode, calibrated p50, cap, ε policy)."""

from __future__ import annotations

import math

import pandas as pd

from analysis.load import Runs, fixed_tolerance, phase_mode
from analysis.tables.constants import ADAPTIVE_MODE, EXACT_POLICY, PHASE_AWARE
from analysis.tables.roles import BOUNDED_TIME, EXACT


def run_params(runs: Runs) -> pd.DataFrame:
    """Per run, what its transport played by, from run.json `transport_params` (the spec only
    where the run.json does not say), read by its traits:

    - mode: a bounded-time transport's timeout rule ("adaptive" | "fixed"; "" for others);
    - p50_ms, t_max_ms: the calibrated burst-free round (rank 0's view, agreed over ranks) and
      the hard cap, in the tables' emulated time (divided by the run's dilation); cap_x =
      t_max_ms / p50_ms as played, else the spec's requested `t_max_p50`; NaN when nothing was
      calibrated (tcp, an older run.json);
    - eps_policy, pinned_eps: what the transport does with loss (`eps_policy`). A phase-aware
      one by its phase mode: "phase-aware" (the adaptive controller), "paper phases (P_low X,
      P_high Y)", or "ε pinned at X" (phase off: the pinned ε, which defaults to the
      stable-phase ε; also `pinned_eps`); one that uses ε without phases "ε fixed at P";
      the others "exact (no ε)" or "timeout (no ε)".
    """
    rows = []
    cols = ["run_id", "transport_params", "spec", "dilation", "completion", "phase_aware"]
    cols += ["uses_epsilon"]
    for run_id, params, spec, dilation, completion, phased, uses_eps in runs.runs[cols].itertuples(
        index=False
    ):
        config, phase = params.get("config") or {}, params.get("phase") or {}
        scale = max(float(dilation or 1.0), 1.0)
        p50, t_max = params.get("p50_ms"), params.get("t_max_ms")
        requested = spec.get("t_max_p50", config.get("t_max_p50"))
        cap_x = t_max / p50 if p50 and t_max else requested
        mode = config.get("optireduce_mode") or spec.get("optireduce_mode", ADAPTIVE_MODE)
        phases = phase_mode(spec, params) if phased else ""
        tolerance = fixed_tolerance(spec, params) if uses_eps else None
        pinned = tolerance if phases == "off" else None
        rows.append(
            {
                "run_id": run_id,
                "mode": str(mode) if completion == BOUNDED_TIME else "",
                "p50_ms": float(p50) / scale if p50 else math.nan,
                "t_max_ms": float(t_max) / scale if t_max else math.nan,
                "cap_x": float(cap_x) if cap_x else math.nan,
                "eps_policy": _eps_policy(completion, uses_eps, phases, phase, tolerance),
                "pinned_eps": pinned if pinned is not None else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=_RUN_PARAMS)


_RUN_PARAMS = ["run_id", "mode", "p50_ms", "t_max_ms", "cap_x", "eps_policy", "pinned_eps"]


def _eps_policy(
    completion: str, uses_eps: bool, phases: str, phase: dict, tolerance: float | None
) -> str:
    """What the run's transport does with loss, as the ablation shows it."""
    if not uses_eps:
        return EXACT_POLICY if completion == EXACT else "timeout (no ε)"
    if not phases:
        return f"ε fixed at {tolerance:g}" if tolerance is not None else "ε fixed"
    if phases == "off":
        return f"ε pinned at {tolerance:g}" if tolerance is not None else "phase off"
    if phases == "paper":
        return f"paper phases (P_low {phase.get('p_low')}, P_high {phase.get('p_high')})"
    return PHASE_AWARE
