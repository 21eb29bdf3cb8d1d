"""The paper's per-event statistic: the round each burst event hit, paired by event."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.stats import cluster_bootstrap, null_quantiles
from analysis.tables.common import pair_identity
from analysis.tables.constants import EVENT_QUANTILES, EVENT_STATS, NULL_LEVEL
from analysis.tables.roles import BASELINE, COMPARISONS, labels_in_role
from analysis.windows import applied_windows


def event_rounds(rl: pd.DataFrame, bursts: pd.DataFrame) -> pd.DataFrame:
    """Per run and applied burst event, the round it hit: of the rounds (max over ranks) whose
    span overlaps the event's window, the slowest. Columns run_id, event_id, round,
    latency_ms. An event that no round overlaps (between rounds, after the run) has no row."""
    out = []
    windows = applied_windows(bursts)
    for run_id, ev in windows.groupby("run_id"):
        r = rl[rl["run_id"] == run_id]
        if r.empty:
            continue
        s, e = r["t_start_s"].to_numpy(), r["t_end_s"].to_numpy()
        lat, rnd = r["latency_ms"].to_numpy(), r["round"].to_numpy()
        for event_id, ws, we in ev[["event_id", "start_s", "end_s"]].itertuples(index=False):
            hit = np.flatnonzero((s < we) & (e > ws))
            if hit.size:
                k = hit[np.argmax(lat[hit])]
                out.append((run_id, int(event_id), int(rnd[k]), float(lat[k])))
    return pd.DataFrame(out, columns=["run_id", "event_id", "round", "latency_ms"])


def _null(calm: pd.DataFrame, runs_a: np.ndarray, runs_b: np.ndarray, seeds: pd.Series) -> dict:
    """The per-event ratios' null: the same pairing over burst-free rounds (the baseline's
    round over the transport's round of the same index on the same repeat, both calm), and
    for each EVENT_QUANTILES quantile the NULL_LEVEL quantile of that statistic over as many
    calm pairs per seed as there were events (`stats.null_quantiles`)."""
    cols = ["repeat", "round", "latency_ms"]
    a = calm.loc[calm["run_id"].isin(runs_a), cols]
    b = calm.loc[calm["run_id"].isin(runs_b), cols]
    pair = a.merge(b, on=["repeat", "round"], suffixes=("", "_base"))
    ratio = pair["latency_ms_base"] / pair["latency_ms"]
    counts = seeds.value_counts().to_dict()
    null = null_quantiles(ratio, pair["repeat"], counts, list(EVENT_QUANTILES.values()))
    tag = f"p{100 * NULL_LEVEL:g}"
    return {"null_rounds": len(pair)} | {
        f"null_{k}_{tag}": float(v) for k, v in zip(EVENT_QUANTILES, null, strict=True)
    }


def _ratio_stats(ratio: pd.Series, seeds: pd.Series) -> dict:
    """Each EVENT_QUANTILES quantile of the per-event ratios, with its seed-cluster bootstrap
    interval (resampling seeds, not events)."""
    qs = list(EVENT_QUANTILES.values())
    lo, hi = cluster_bootstrap(ratio.to_numpy(), seeds.to_numpy(), qs)
    out = {}
    for (k, q), lo_k, hi_k in zip(EVENT_QUANTILES.items(), lo, hi, strict=True):
        out |= {
            f"event_ratio_{k}": float(ratio.quantile(q)),
            f"event_ratio_{k}_lo": float(lo_k),
            f"event_ratio_{k}_hi": float(hi_k),
        }
    return out


def event_table(rl: pd.DataFrame, bursts: pd.DataFrame) -> pd.DataFrame:
    """The paper's single-round statistic: per burst event, the hit round's latency under the
    baseline over under the transport, paired by event on the same seed and repeat (same
    schedule, same event ids), reported as median, p90 and max over events, each with a 95%
    bootstrap interval over seeds, beside the ratio of calm-round medians (what the baseline
    costs when nothing bursts) and each one's null (`_null`: the same statistic over as many
    paired calm rounds; a ratio is an effect only above its null's p95). `events`
    counts the paired events, `seeds` the repeats they came from. A baseline is a label whose
    transport plays "baseline" in a comparison (rl's role columns); rows say which."""
    hits = event_rounds(rl, bursts)
    cols = ["comparison", "workload", "preset", "label", "transport", "baseline"]
    cols += ["baseline_transport"]
    cols += EVENT_STATS
    if hits.empty:
        return pd.DataFrame(columns=cols)
    info = rl.drop_duplicates("run_id").set_index("run_id")
    roles = [f"role_{c}" for c in COMPARISONS]
    keep = ["workload", "label", "preset", "transport", "repeat", *roles]
    hits = hits.join(info[keep], on="run_id")
    calm_rounds = rl[~rl["in_burst"]]
    calm = calm_rounds.groupby("run_id")["latency_ms"].median()
    rows = []
    for (workload, preset), g in hits.groupby(["workload", "preset"]):
        bases = [(c, base) for c in COMPARISONS for base in labels_in_role(g, c, BASELINE)]
        for comparison, base in bases:
            b = g[g["label"] == base]
            for label, a in g.groupby("label"):
                if label == base:
                    continue
                pair = a.merge(b, on=["repeat", "event_id"], suffixes=("", "_base"))
                if pair.empty:
                    continue
                ratio = pair["latency_ms_base"] / pair["latency_ms"]
                runs_a, runs_b = a["run_id"].unique(), b["run_id"].unique()
                calm_ratio = calm.reindex(runs_b).median() / calm.reindex(runs_a).median()
                rows.append(
                    {
                        "comparison": comparison,
                        **pair_identity(workload, preset, label, base, a, b),
                        "events": len(pair),
                        "seeds": pair["repeat"].nunique(),
                        **_ratio_stats(ratio, pair["repeat"]),
                        "calm_ratio": float(calm_ratio),
                        **_null(calm_rounds, runs_a, runs_b, pair["repeat"]),
                    }
                )
    return pd.DataFrame(rows, columns=cols)
