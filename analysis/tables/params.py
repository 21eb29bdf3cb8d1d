"""What each run's transport played by, from run.json (mode, calibrated p50, cap, ε policy)."""

from __future__ import annotations

import math

import pandas as pd

from analysis.load import Runs
from analysis.tables.constants import ADAPTIVE_MODE, PAPER_BASELINE, PAPER_SYSTEM, PHASE_AWARE


def run_params(runs: Runs) -> pd.DataFrame:
    """Per run, what its transport played by, from run.json `transport_params` (the spec only
    where the run.json does not say):

    - mode: optireduce's ("adaptive" | "fixed"; "" for other transports);
    - p50_ms, t_max_ms: the calibrated burst-free round (rank 0's view, agreed over ranks) and
      the hard cap, in the tables' emulated time (divided by the run's dilation); cap_x =
      t_max_ms / p50_ms as played, else the spec's requested `t_max_p50`; NaN when nothing was
      calibrated (tcp, an older run.json);
    - eps_policy, pinned_eps: dblp's ε policy, "phase-aware" or "ε pinned at X" (phase off:
      the pinned ε, which defaults to the stable-phase ε); "" and NaN for other transports.
    """
    rows = []
    cols = ["run_id", "transport", "transport_params", "spec", "dilation"]
    for run_id, transport, params, spec, dilation in runs.runs[cols].itertuples(index=False):
        config, phase = params.get("config") or {}, params.get("phase") or {}
        scale = max(float(dilation or 1.0), 1.0)
        p50, t_max = params.get("p50_ms"), params.get("t_max_ms")
        requested = spec.get("t_max_p50", config.get("t_max_p50"))
        cap_x = t_max / p50 if p50 and t_max else requested
        mode = config.get("optireduce_mode") or spec.get("optireduce_mode", ADAPTIVE_MODE)
        phased = phase.get("enabled", spec.get("phase", "on") != "off")
        pinned = phase.get("pinned_epsilon", spec.get("epsilon"))
        if pinned is None:
            pinned = phase.get("eps_stable")
        is_dblp = transport == PAPER_SYSTEM
        pinned_eps = float(pinned) if is_dblp and not phased and pinned is not None else math.nan
        rows.append(
            {
                "run_id": run_id,
                "mode": str(mode) if transport == PAPER_BASELINE else "",
                "p50_ms": float(p50) / scale if p50 else math.nan,
                "t_max_ms": float(t_max) / scale if t_max else math.nan,
                "cap_x": float(cap_x) if cap_x else math.nan,
                "eps_policy": _eps_policy(phased, pinned) if is_dblp else "",
                "pinned_eps": pinned_eps,
            }
        )
    return pd.DataFrame(rows, columns=_RUN_PARAMS)


_RUN_PARAMS = ["run_id", "mode", "p50_ms", "t_max_ms", "cap_x", "eps_policy", "pinned_eps"]


def _eps_policy(phased: bool, pinned: float | None) -> str:
    if phased:
        return PHASE_AWARE
    return f"ε pinned at {pinned:g}" if pinned is not None else "phase off"
