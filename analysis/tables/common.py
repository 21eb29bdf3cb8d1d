"""What the tables share: the round-level frame every table starts from, and the helpers
that build a group row (validity flags, left-out runs, estimates, repeats paired by seed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.load import TRAIT_COLUMNS, Runs, origins
from analysis.stats import Estimate, mean_ci
from analysis.tables.constants import GROUP
from analysis.windows import in_burst


def round_level(runs: Runs) -> pd.DataFrame:
    """One row per (run, round): latency (max over ranks), span, loss, in_burst, t_rel_s
    (seconds since the run's origin_s, see `analysis.load.origins`), and the run's identity
    with its transport's traits and preset's role (TRAIT_COLUMNS)."""
    r = runs.rounds
    r = r[(r["stage"] == "total") & ~r["is_warmup"].astype(bool)]
    cols = {
        "latency_ms": ("latency_ms", "max"),
        "t_start_s": ("t_start_s", "min"),
        "t_end_s": ("t_end_s", "max"),
        "delivered_loss": ("delivered_loss", "mean"),
        "epsilon": ("epsilon", "max"),
        "nacks": ("nacks", "sum"),
        "retx_pkts": ("retx_pkts", "sum"),
        "cap_hit": ("cap_hit", "any"),
        "cpu_wait_ms": ("cpu_wait_ms", "max"),
        "iter": ("iter", "min"),
        "train_phase": ("train_phase", "first"),
    }
    g = r.groupby(["run_id", "round"], as_index=False).agg(**cols)
    info = runs.runs[
        ["run_id", *GROUP, "transport", "repeat", "status", "unfaithful", "not_judged"]
        + list(TRAIT_COLUMNS)
    ]
    g = g.merge(info, on="run_id", how="left")
    g["in_burst"] = in_burst(g, runs.bursts).to_numpy()
    g["origin_s"] = g["run_id"].map(origins(runs)).astype("float64")
    g["t_rel_s"] = g["t_start_s"] - g["origin_s"]
    return g


def rejections_text(rejections: dict[str, int]) -> str:
    """ "source 3, nonfinite 1": rejected datagrams by reason, most frequent first."""
    items = sorted(((k, int(v)) for k, v in rejections.items() if v), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v}" for k, v in items)


def validity_flags(runs_df: pd.DataFrame, left_out: pd.DataFrame | None = None) -> str:
    """e.g. "unfaithful 1/3, rejected datagrams 1/3, left out: interrupted 1"; empty when every
    run was ok, fed and clean. left_out: the group's runs that were not aggregated."""
    n = len(runs_df)
    out = []
    k = int(runs_df["unfaithful"].astype(bool).sum())
    if k:
        out.append(f"unfaithful {k}/{n}")
    k = int(runs_df["not_judged"].astype(bool).sum()) if "not_judged" in runs_df else 0
    if k:
        out.append(f"fidelity not judged {k}/{n}")
    if "rejected" in runs_df:
        k = int((runs_df["rejected"] > 0).sum())
        if k:
            out.append(f"rejected datagrams {k}/{n}")
    for status in ("failed", "interrupted", "running", "partial"):
        k = int((runs_df["status"] == status).sum())
        if k:
            out.append(f"{status} {k}/{n}")
    if left_out is not None and len(left_out):
        counts = left_out["status"].value_counts()
        out.append("left out: " + ", ".join(f"{s} {k}" for s, k in counts.items()))
    return ", ".join(out)


def left_of(left_out: pd.DataFrame | None, **eq: object) -> pd.DataFrame | None:
    """The left-out runs matching eq (e.g. workload=..., label=..., preset=...)."""
    if left_out is None or left_out.empty:
        return None
    m = pd.Series(True, index=left_out.index)
    for k, v in eq.items():
        m &= left_out[k].isin(v) if isinstance(v, (list, tuple, set)) else left_out[k] == v
    return left_out[m]


def est_columns(prefix: str, e: Estimate) -> dict:
    return {prefix: e.mean, f"{prefix}_lo": e.lo, f"{prefix}_hi": e.hi}


def nan_est() -> Estimate:
    return Estimate(math.nan, math.nan, math.nan, 0)


def paired_values(
    a: pd.DataFrame, b: pd.DataFrame, col: str
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Values of col for two groups, paired by repeat when their repeats coincide."""
    a, b = a.dropna(subset=[col]), b.dropna(subset=[col])
    if len(a) > 0 and sorted(a["repeat"]) == sorted(b["repeat"]) and a["repeat"].is_unique:
        a, b = a.sort_values("repeat"), b.sort_values("repeat")
        return a[col].to_numpy(), b[col].to_numpy(), True
    return a[col].to_numpy(), b[col].to_numpy(), False


def pair_identity(workload, preset, label, base, a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """The key columns of a transport-vs-baseline row (comparisons, events)."""
    return {
        "workload": workload,
        "preset": preset,
        "label": label,
        "transport": a["transport"].iloc[0],
        "baseline": base,
        "baseline_transport": b["transport"].iloc[0],
    }


def group_table(
    metrics: pd.DataFrame, columns: dict[str, str], left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Mean ± CI over repeats of each metric column, per group (columns: metric -> output)."""
    rows = []
    for key, g in metrics.groupby(GROUP):
        row = dict(zip(GROUP, key, strict=True))
        row["runs"] = len(g)
        for col, out in columns.items():
            row.update(est_columns(out, mean_ci(g[col].to_numpy())))
        row["validity"] = validity_flags(g, left_of(left_out, **dict(zip(GROUP, key, strict=True))))
        rows.append(row)
    return pd.DataFrame(rows)
