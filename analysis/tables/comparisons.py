"""Each transport vs each baseline label, per comparison: in-burst mean ratio, time cuts
(arithmetic means over paired seeds, the geometric mean beside them), Δ accuracy. A baseline
is a label whose transport plays "baseline" in a comparison (run.json's traits); each row says
which comparison (`comparison`: "paper" | "design")."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.stats import Estimate, cut_ci, diff_ci, ratio_ci
from analysis.tables.common import (
    est_columns,
    left_of,
    nan_est,
    pair_identity,
    paired_values,
    validity_flags,
)
from analysis.tables.roles import BASELINE, COMPARISONS, labels_in_role


def _reduction(a: pd.DataFrame, b: pd.DataFrame, col: str) -> tuple[Estimate, float, bool, float]:
    """The cut 1 - a/b of a time column: its arithmetic mean over seeds with a t-interval
    (`cut_ci`), its geometric-mean counterpart (1 - the geometric mean of a/b), whether repeats
    were paired, and the largest per-seed cut (NaN unless paired)."""
    x, y, paired = paired_values(a, b, col)
    if not (len(x) and len(y)):
        return nan_est(), math.nan, paired, math.nan
    geo = 1 - ratio_ci(x, y, paired=paired).mean
    best = float(np.max(1 - x / y)) if paired else math.nan
    return cut_ci(x, y, paired=paired), geo, paired, best


def comparisons(metrics: pd.DataFrame, left_out: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (workload, preset, comparison, baseline, label): in-burst mean ratio, reductions of
    training time and of time-to-accuracy, Δ final accuracy. metrics: `run_metrics` (with
    the transports' role columns)."""
    rows = []
    bases = [(c, base) for c in COMPARISONS for base in labels_in_role(metrics, c, BASELINE)]
    for (workload, preset), g in metrics.groupby(["workload", "preset"]):
        for comparison, base in bases:
            b = g[g["label"] == base]
            if b.empty:
                continue
            for label, a in g.groupby("label"):
                if label == base:
                    continue
                x, y, p_burst = paired_values(a, b, "burst_mean_ms")
                burst = ratio_ci(y, x, paired=p_burst) if len(x) and len(y) else nan_est()
                red, red_geo, p_time, red_max = _reduction(a, b, "train_s")
                tta, tta_geo, _, _ = _reduction(a, b, "tta_s")
                x, y, p_acc = paired_values(a, b, "final_acc")
                dacc = diff_ci(x, y, paired=p_acc) if len(x) and len(y) else nan_est()
                rows.append(
                    {
                        "comparison": comparison,
                        **pair_identity(workload, preset, label, base, a, b),
                        **est_columns("burst_mean_ratio", burst),
                        **est_columns("e2e_reduction", red),
                        "e2e_reduction_geo": red_geo,
                        "e2e_reduction_max": red_max,
                        **est_columns("tta_reduction", tta),
                        "tta_reduction_geo": tta_geo,
                        **est_columns("acc_delta", dacc),
                        "n": burst.n or red.n,
                        "paired": p_burst and p_time,
                        "validity": validity_flags(
                            pd.concat([a, b]),
                            left_of(
                                left_out, workload=workload, preset=preset, label=(label, base)
                            ),
                        ),
                    }
                )
    return pd.DataFrame(rows, columns=_COMPARISON_COLUMNS)


_COMPARISON_COLUMNS = [
    "comparison",
    "workload",
    "preset",
    "label",
    "transport",
    "baseline",
    "baseline_transport",
    "burst_mean_ratio",
    "burst_mean_ratio_lo",
    "burst_mean_ratio_hi",
    "e2e_reduction",
    "e2e_reduction_lo",
    "e2e_reduction_hi",
    "e2e_reduction_geo",
    "e2e_reduction_max",
    "tta_reduction",
    "tta_reduction_lo",
    "tta_reduction_hi",
    "tta_reduction_geo",
    "acc_delta",
    "acc_delta_lo",
    "acc_delta_hi",
    "n",
    "paired",
    "validity",
]
