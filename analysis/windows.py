"""Which rounds happened during a burst, from the bursts table's *applied* times.

Planned times are intent; applied times are what the network did, so only they count.
An event whose applied start is NaN never happened and is ignored. An event applied but
with no recorded revert (applied end NaN, e.g. the run died mid-burst) stays open to the
end of the run: the impairment was in place and nobody took it off.

Edge rule: a round [t_start_s, t_end_s] is in-burst iff it overlaps a window
[applied_start_s, applied_end_s] for a positive length of time, i.e.
t_start_s < applied_end_s and t_end_s > applied_start_s. A round that ends exactly
when a burst starts, or starts exactly when it ends, is not in-burst. A zero-length round
counts when its instant lies strictly inside a window.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Burst kinds that impair nothing (a schedule placeholder).
INERT_KINDS = frozenset({"none"})


def applied_windows(bursts: pd.DataFrame) -> pd.DataFrame:
    """One row per applied event: run_id, event_id, start_s, end_s (merged over directions)."""
    b = bursts[~bursts["kind"].isin(INERT_KINDS) & bursts["applied_start_s"].notna()]
    if b.empty:
        return pd.DataFrame(
            {
                "run_id": pd.Series(dtype="object"),
                "event_id": pd.Series(dtype="int64"),
                "start_s": pd.Series(dtype="float64"),
                "end_s": pd.Series(dtype="float64"),
            }
        )
    b = b.assign(applied_end_s=b["applied_end_s"].fillna(np.inf))
    w = b.groupby(["run_id", "event_id"], as_index=False).agg(
        start_s=("applied_start_s", "min"), end_s=("applied_end_s", "max")
    )
    return w.sort_values(["run_id", "start_s"], ignore_index=True)


def in_burst(spans: pd.DataFrame, bursts: pd.DataFrame) -> pd.Series:
    """Boolean per row of `spans` (run_id, t_start_s, t_end_s): overlaps an applied window."""
    out = pd.Series(False, index=spans.index, name="in_burst")
    windows = applied_windows(bursts)
    for run_id, w in windows.groupby("run_id"):
        rows = spans["run_id"] == run_id
        if not rows.any():
            continue
        s = spans.loc[rows, "t_start_s"].to_numpy()[:, None]
        e = spans.loc[rows, "t_end_s"].to_numpy()[:, None]
        ws, we = w["start_s"].to_numpy()[None, :], w["end_s"].to_numpy()[None, :]
        hit = ((s < we) & (e > ws)).any(axis=1)
        out.loc[rows] = hit
    return out
