"""Phase ablation: a phase-aware transport's ε policies on training runs beside the others."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.stats import diff_ci, mean_ci, ratio_ci
from analysis.tables.common import est_columns, left_of, nan_est, paired_values, validity_flags
from analysis.tables.constants import FAST_EPSILON
from analysis.tables.roles import EXACT, exact_control


def _kind(m: pd.DataFrame) -> pd.Series:
    """The ablation's row order by traits: phase-aware, other ε users, exact, the rest."""
    exact = m["completion"].eq(EXACT)
    return np.select([m["phase_aware"], m["uses_epsilon"], exact], [0, 1, 2], 3)


def phase_ablation(
    metrics: pd.DataFrame, params: pd.DataFrame, left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """A phase-aware transport's ε policies on training runs (runs with evaluations), beside
    every other transport (ordered by traits: phase-aware, other ε users, exact, the rest):
    per (workload, preset, label) training time, time to target, final accuracy
    and mean delivered loss (mean ± 95% CI over seeds), share of rounds in a critical phase
    and mean ε; Δ final accuracy vs the exact reference (`exact_baseline`: the exact control,
    else another exact transport) and training time over the label with ε pinned at
    FAST_EPSILON (`time_vs_fast`), both paired by seed. Empty without a training run of a
    phase-aware transport."""
    m = metrics[metrics["final_acc"].notna()]
    m = m.merge(params[["run_id", "eps_policy", "pinned_eps"]], on="run_id", how="left")
    rows = []
    for (workload, preset), g in m.groupby(["workload", "preset"]):
        if not g["phase_aware"].any():
            continue
        exact = exact_control(g)
        fast = sorted(g.loc[np.isclose(g["pinned_eps"], FAST_EPSILON), "label"].unique())
        refs = {
            "acc_delta": (exact, "final_acc", diff_ci),
            "time_vs_fast": (fast[0] if fast else "", "train_s", ratio_ci),
        }
        for label, a in g.groupby("label"):
            row = {"workload": workload, "preset": preset, "label": label,
                   "transport": a["transport"].iloc[0], "eps_policy": a["eps_policy"].iloc[0],
                   "pinned_eps": a["pinned_eps"].iloc[0], "runs": len(a),
                   "_o": int(_kind(a)[0])}  # fmt: skip
            for col in ("train_s", "tta_s", "final_acc", "loss_mean"):
                row.update(est_columns(col, mean_ci(a[col].to_numpy())))
            row["critical_share"] = float(a["critical_share"].mean())
            row["eps_mean"] = float(a["eps_mean"].mean())
            for name, (ref, col, compare) in refs.items():
                est = nan_est()
                if ref and ref != label:
                    x, y, paired = paired_values(a, g[g["label"] == ref], col)
                    if len(x) and len(y):
                        est = compare(x, y, paired=paired)
                row.update(est_columns(name, est))
            row["exact_baseline"] = exact
            row["validity"] = validity_flags(
                a, left_of(left_out, workload=workload, preset=preset, label=label)
            )
            rows.append(row)
    t = pd.DataFrame(rows, columns=[*_ABLATION_COLUMNS, "_o"])
    return (
        t.sort_values(["workload", "preset", "_o", "label"])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


_ABLATION_COLUMNS = [
    "workload",
    "preset",
    "label",
    "transport",
    "eps_policy",
    "pinned_eps",
    "runs",
    *(
        f"{c}{s}"
        for c in ("train_s", "tta_s", "final_acc", "loss_mean")
        for s in ("", "_lo", "_hi")
    ),
    "critical_share",
    "eps_mean",
    *(f"acc_delta{s}" for s in ("", "_lo", "_hi")),
    *(f"time_vs_fast{s}" for s in ("", "_lo", "_hi")),
    "exact_baseline",
    "validity",
]
