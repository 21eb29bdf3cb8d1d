"""The paper's own tables, as this testbed measures them: the burst-iteration latency with its
tail and average (Tables II–VI), training time normalised to the paper's system with the share
of rounds hit (Table VIII, and the dose-response), and final accuracy as non-inferiority
against the exact control (Table IX).

Who is the paper's system and who the exact control comes from run.json's traits (`roles`),
never from names, so a new policy lands in the right rows. The per-event ratios with their
nulls are the events table's; these tables give the latencies and times behind them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.stats import mean_ci, quantile, t_critical
from analysis.tables.common import est_columns, nan_est, paired_values, validity_flags
from analysis.tables.constants import GROUP
from analysis.tables.events import event_rounds
from analysis.tables.roles import CALM, PAPER, SYSTEM, exact_control, labels_in_role

#: Non-inferiority margin of final accuracy against the exact control (Table IX): 1 point.
ACCURACY_MARGIN = -0.01
#: One-sided level of its lower bound.
ONE_SIDED_LEVEL = 0.95


def burst_latency_table(rl: pd.DataFrame, bursts: pd.DataFrame) -> pd.DataFrame:
    """Per group with burst events (Tables II–VI): the hit rounds' latency (median over
    events, and their max), the tail (p99 and max over every round of the group's runs, hit
    and calm), the average (mean over every round), the calm rounds' median, the worst
    delivered loss and the rounds that met the cap. Rounds are the max over ranks."""
    hits = event_rounds(rl, bursts)
    if hits.empty:
        return pd.DataFrame()
    info = rl.drop_duplicates("run_id").set_index("run_id")
    hits = hits.join(info[GROUP], on="run_id")
    rows = []
    for key, h in hits.groupby(GROUP):
        g = rl[rl["run_id"].isin(h["run_id"].unique())]
        calm = g[~g["in_burst"]]["latency_ms"].to_numpy()
        lat = g["latency_ms"].to_numpy()
        p99 = quantile(lat, 0.99)
        rows.append(
            dict(zip(GROUP, key, strict=True))
            | {
                "runs": g["run_id"].nunique(),
                "events": len(h),
                "hit_median_ms": float(h["latency_ms"].median()),
                "hit_max_ms": float(h["latency_ms"].max()),
                "tail_p99_ms": p99.number,
                "tail_p99_rule": p99.rule,
                "tail_max_ms": float(lat.max()),
                "mean_ms": float(lat.mean()),
                "calm_median_ms": float(np.median(calm)) if calm.size else math.nan,
                "loss_max": float(g["delivered_loss"].max()),
                "epsilon_max": float(g["epsilon"].max()),
                "cap_rounds": int(g["cap_hit"].sum()),
            }
        )
    return pd.DataFrame(rows)


def normalised_time_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, preset) and label (Table VIII; under the dose presets, the
    dose-response): training time over the paper system's on the same seeds (mean and
    t-interval of the per-seed ratios; 1 for the system itself), the cut 1 - system/label
    likewise, and the share of rounds the preset hit (bursts / rounds, mean over runs)."""
    systems = labels_in_role(metrics, PAPER, SYSTEM)
    rows = []
    for (workload, preset), g in metrics.groupby(["workload", "preset"]):
        for system in systems:
            s = g[g["label"] == system]
            if s.empty:
                continue
            for label, a in g.groupby("label"):
                x, y, paired = paired_values(a, s, "train_s")
                ratio = mean_ci(x / y) if paired and len(x) else nan_est()
                cut = mean_ci(1 - y / x) if paired and len(x) else nan_est()
                rows.append(
                    {
                        "workload": workload,
                        "preset": preset,
                        "label": label,
                        "system": system,
                        "runs": len(a),
                        "hit_share": float(
                            (a["bursts"] / a["rounds"].where(a["rounds"] > 0)).mean()
                        ),
                        "train_s": float(a["train_s"].mean()),
                        **est_columns("time_vs_system", ratio),
                        **est_columns("system_cut", cut),
                        "paired": paired,
                        "validity": validity_flags(a),
                    }
                )
    return pd.DataFrame(rows)


def noninferiority_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per training group (Table IX): final accuracy minus the exact control's under the calm
    preset, paired by seed, with its two-sided interval and its one-sided ONE_SIDED_LEVEL lower
    bound; `noninferior` when that bound is above ACCURACY_MARGIN. Only groups that trained as
    many steps as the control: a shorter run (the dose-response's) is not a finished one."""
    m = metrics.dropna(subset=["final_acc"])
    control = exact_control(m)
    if not control:
        return pd.DataFrame()
    ref = m[(m["label"] == control) & m["preset_role"].eq(CALM)]
    rows = []
    for key, a in m.groupby(GROUP):
        row = dict(zip(GROUP, key, strict=True))
        if row["label"] == control and a["preset_role"].eq(CALM).all():
            continue
        if set(a["steps"]) != set(ref["steps"]):
            continue
        x, y, paired = paired_values(a, ref, "final_acc")
        d = x - y if paired else np.array([])
        est = mean_ci(d)
        lower = math.nan
        if d.size >= 2:
            t = t_critical(d.size - 1, 2 * ONE_SIDED_LEVEL - 1)  # one-sided: a two-sided 90%
            lower = float(d.mean() - t * d.std(ddof=1) / math.sqrt(d.size))
        rows.append(
            row
            | {
                "control": control,
                "runs": len(a),
                "final_acc": float(a["final_acc"].mean()),
                **est_columns("acc_delta", est),
                "acc_delta_lower": lower,
                "margin": ACCURACY_MARGIN,
                "noninferior": bool(lower > ACCURACY_MARGIN),  # False when it cannot be shown
                "paired": paired,
            }
        )
    return pd.DataFrame(rows)
