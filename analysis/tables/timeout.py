"""A bounded-time baseline's timeout as an axis: the per-event statistic against it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.tables.constants import ADAPTIVE_MODE, EVENT_STATS, GROUP
from analysis.tables.events import event_rounds
from analysis.tables.roles import BOUNDED_TIME, SYSTEM, Cast

#: The timeout-axis table's columns.
_TIMEOUT_COLUMNS = [
    "comparison",
    "workload",
    "preset",
    "label",
    "baseline",
    "mode",
    "timeout_x",
    "cap_x",
    "hit_x",
    *EVENT_STATS,
]


def timeout_axis(
    rl: pd.DataFrame,
    bursts: pd.DataFrame,
    events: pd.DataFrame,
    params: pd.DataFrame,
    cast: Cast,
) -> pd.DataFrame:
    """The paper's per-event statistic against the baseline's timeout: per (comparison,
    workload, bursty preset, system label) with at least two labels of a bounded-time
    baseline (it has a timeout), a row per such label.

    cap_x: its hard cap over its calibrated calm p50 (median over its runs); hit_x: its median
    hit round over that p50, what a burst cost it; timeout_x, the x it is drawn at: cap_x for
    a fixed timeout, hit_x for the adaptive mode (whose cap is a ceiling it adapts under).
    Empty when no preset has several timeouts of a bounded-time baseline."""
    ev = events[
        cast.completion(events["baseline_transport"]).eq(BOUNDED_TIME)
        & cast.role(events["transport"], events["comparison"]).eq(SYSTEM)
        & cast.bursty(events["preset"])
    ]
    if ev.empty:
        return pd.DataFrame(columns=_TIMEOUT_COLUMNS)
    calm = rl[~rl["in_burst"]].groupby("run_id")["latency_ms"].median()
    per_run = params.set_index("run_id")
    p50 = per_run["p50_ms"].fillna(calm.reindex(per_run.index))  # measured, when not calibrated
    hits = event_rounds(rl, bursts)
    hits["hit_x"] = hits["latency_ms"] / hits["run_id"].map(p50)
    info = rl.drop_duplicates("run_id")[["run_id", *GROUP]]
    rows = []
    for _, g in ev.groupby(["comparison", "workload", "preset", "label"]):
        if g["baseline"].nunique() < 2:
            continue
        for r in g.itertuples(index=False):
            runs_b = info.loc[
                (info["workload"] == r.workload)
                & (info["preset"] == r.preset)
                & (info["label"] == r.baseline),
                "run_id",
            ]
            modes = per_run.loc[per_run.index.isin(runs_b), "mode"]
            mode = modes.mode().iloc[0] if not modes.empty else ""
            cap_x = float(per_run.loc[per_run.index.isin(runs_b), "cap_x"].median())
            hit_x = float(hits.loc[hits["run_id"].isin(runs_b), "hit_x"].median())
            rows.append(
                {
                    **{k: getattr(r, k) for k in ("comparison", "workload", "preset", "label")},
                    "baseline": r.baseline,
                    "mode": mode,
                    "timeout_x": hit_x if mode == ADAPTIVE_MODE else cap_x,
                    "cap_x": cap_x,
                    "hit_x": hit_x,
                    **{k: getattr(r, k) for k in EVENT_STATS},
                }
            )
    t = pd.DataFrame(rows, columns=_TIMEOUT_COLUMNS)
    keys = ["comparison", "workload", "preset", "label", "mode", "timeout_x"]
    return t.sort_values(keys, ignore_index=True)


def timeout_reaching(axis: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per (workload, preset, label) of the timeout axis: the fixed timeout multiple at which
    the per-event max first reaches `level`, linearly interpolated between swept points
    (reached_x; NaN when it never does), the swept range, and the largest max and where."""
    cols = ["workload", "preset", "label", "reached_x", "swept_lo", "swept_hi", "best", "best_x"]
    rows = []
    fixed = axis[(axis["mode"] != ADAPTIVE_MODE) & axis["timeout_x"].notna()]
    for (workload, preset, label), g in fixed.groupby(["workload", "preset", "label"]):
        g = g.sort_values("timeout_x")
        x, y = g["timeout_x"].to_numpy(float), g["event_ratio_max"].to_numpy(float)
        reached = math.nan
        up = np.flatnonzero(y >= level)
        if up.size:
            i = int(up[0])
            reached = (
                x[0] if i == 0 else float(np.interp(level, y[i - 1 : i + 1], x[i - 1 : i + 1]))
            )
        k = int(np.nanargmax(y))
        rows.append((workload, preset, label, reached, x[0], x[-1], y[k], x[k]))
    return pd.DataFrame(rows, columns=cols)
