"""Sentences generated from the tables: the timeout axis, the phase ablation, definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.formatting import fmt_acc, fmt_multiple, fmt_num, fmt_pct, fmt_ratio, is_nan
from analysis.tables.constants import EXACT_POLICY, FAST_EPSILON, PHASE_AWARE, PUBLISHED
from analysis.tables.timeout import timeout_reaching


def timeout_sentences(axis: pd.DataFrame) -> list[str]:
    """Per (workload, preset, system) of the timeout axis: at which fixed timeout the
    per-event max reaches the published figure here, or that it does not in the swept range."""
    level = PUBLISHED["event_ratio_max"]
    out = []
    for r in timeout_reaching(axis, level).itertuples(index=False):
        swept = fmt_multiple(r.swept_lo) + (
            f"–{fmt_multiple(r.swept_hi)}" if r.swept_hi != r.swept_lo else ""
        )
        where = f"{r.workload}, preset {r.preset}: the per-event max of the baseline / {r.label}"
        if is_nan(r.reached_x):
            out.append(
                f"{where} does not reach the published {fmt_ratio(level)} within the swept "
                f"timeouts ({swept} the calm p50); its largest is {fmt_ratio(r.best)} at "
                f"{fmt_multiple(r.best_x)}."
            )
        elif r.reached_x == r.swept_lo:
            out.append(
                f"{where} is {fmt_ratio(level)} or more already at the smallest swept timeout, "
                f"{swept.split('–')[0]} the calm p50."
            )
        else:
            out.append(
                f"{where} reaches the published {fmt_ratio(level)} at a fixed timeout of about "
                f"{fmt_multiple(r.reached_x)} the calm p50 (interpolated linearly between the "
                f"swept points; swept {swept})."
            )
    return out


def _relation(x: float, lo: float, hi: float) -> str:
    """Where x lies against [lo, hi]."""
    return "below" if x < lo else "above" if x > hi else "within"


def _time_verdict(r: float, lo: float, hi: float) -> str:
    """Phase-aware ε's training time against the pinned run's, from their paired ratio."""
    if is_nan(lo) or is_nan(hi):
        return "reached" if r <= 1 else "did not reach"
    if hi < 1:
        return "beat"
    return "matched (no difference at 95%)" if lo <= 1 else "did not reach"


def phase_sentences(ablation: pd.DataFrame) -> list[str]:
    """Per (workload, preset): did phase-aware ε reach the training time of ε pinned at
    FAST_EPSILON while keeping its final accuracy within the 95% CI of the exact transports
    (the rows whose ε policy is exact)?"""
    out = []
    for (workload, preset), g in ablation.groupby(["workload", "preset"]):
        aware = g[(g["eps_policy"] == PHASE_AWARE) & g["time_vs_fast"].notna()]
        fast = g[np.isclose(g["pinned_eps"].astype(float), FAST_EPSILON)]
        if aware.empty or fast.empty:
            continue
        a, f = aware.iloc[0], fast.iloc[0]
        r, lo, hi = a["time_vs_fast"], a["time_vs_fast_lo"], a["time_vs_fast_hi"]
        spread = (
            " (one seed, no interval)" if is_nan(lo) else f" [{fmt_ratio(lo)}, {fmt_ratio(hi)}]"
        )
        said = (
            f"{workload}, preset {preset}: phase-aware `{a['label']}` {_time_verdict(r, lo, hi)} "
            f"the training time of `{f['label']}` (ε pinned at {FAST_EPSILON:g}): "
            f"{fmt_num(a['train_s'])} s vs {fmt_num(f['train_s'])} s, ratio {fmt_ratio(r)}{spread}"
        )
        acc, accs = a["final_acc"], []
        for ref in g[g["eps_policy"] == EXACT_POLICY].itertuples(index=False):
            lo, hi = ref.final_acc_lo, ref.final_acc_hi
            if is_nan(lo) or is_nan(hi):
                where = _relation(acc, ref.final_acc, ref.final_acc).replace("within", "equal to")
                accs.append(f"{where} `{ref.label}`'s {fmt_acc(ref.final_acc)} (one seed)")
            else:
                where = _relation(acc, lo, hi)
                accs.append(f"{where} `{ref.label}`'s 95% CI [{fmt_acc(lo)}, {fmt_acc(hi)}]")
        if accs:
            said += f"; its final accuracy {fmt_acc(acc)} is " + " and ".join(accs)
        out.append(said + ".")
    return out


def definitions(training: pd.DataFrame) -> str:
    target = training["target_acc"].dropna() if "target_acc" in training else []
    tgt = (
        f" Time to target: first evaluation ≥ {target.iloc[0]:.3f} accuracy." if len(target) else ""
    )
    return (
        "Definitions: a round's latency is the max over ranks (warm-up excluded); in burst = "
        "overlaps an applied burst window; a quantile q needs ≥ 10/(1−q) rounds, else the "
        "table shows the max and says so (`max X (n=N)`; the CSV's `*_rule` column); "
        "[lo, hi] = 95% t-interval over repeats, shown only with ≥ 2 repeats; e2e time cut = "
        "1 − the system's training time / the baseline's, mean over repeats per preset and max "
        "over the seeds, paired by seed (the "
        f"paper's {fmt_pct(PUBLISHED['e2e_reduction_mean'])} mean and "
        f"{fmt_pct(PUBLISHED['e2e_reduction_max'])} max are over its own settings); Δ final "
        "accuracy = the system's minus the baseline's, in points; hit-round "
        "ratio = per burst event, the latency of the round it hit under the baseline over "
        "under the system, paired by event on the same seed: max / p90 / median over events "
        f"(the paper's {fmt_ratio(PUBLISHED['event_ratio_max'])} is such a max; a max has no "
        "confidence interval, so the events and "
        "seeds it is the max of are given); the paper's comparison pairs the transports whose "
        "run.json traits give them the role system and baseline in it, the design comparison "
        "likewise, and the published figures belong to the paper's comparison only; the "
        "paper's statistics use presets that impair the network; only runs with status ok "
        "are aggregated." + tgt
    )
