"""Sentences generated from the tables: the timeout axis, the phase ablation, definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.formatting import fmt_acc, fmt_multiple, fmt_num, fmt_pct, fmt_ratio, is_nan
from analysis.tables.constants import (
    EXACT_POLICY,
    FAST_EPSILON,
    PHASE_AWARE,
    PUBLISHED,
    TARGET_FRACTION,
)
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


def _against_null(row: pd.Series, k: str) -> str:
    """ "the max 1.91× [1.40×, 1.91×] against its null's 1.90×: an effect": one quantile."""
    x, lo, hi, null = (row[c] for c in (*(f"event_ratio_{k}{e}" for e in ("", "_lo", "_hi")),
                                        f"null_{k}_p95"))  # fmt: skip
    ci = "" if is_nan(lo) else f" [{fmt_ratio(lo)}, {fmt_ratio(hi)}]"
    said = "above it: an effect" if x > null else "not above it: no effect"
    return f"the {k} {fmt_ratio(x)}{ci} against its null's {fmt_ratio(null)}, {said}"


def null_sentences(paper: pd.DataFrame) -> list[str]:
    """Per row of the paper's statistics: whether the hit-round ratio's max, p90 and median
    each lie above the p95 of its null (the same statistic over as many paired calm rounds
    per seed); only above it is a ratio an effect."""
    out = []
    for _, r in paper.dropna(subset=["event_ratio_max", "null_max_p95"]).iterrows():
        ratios = "; ".join(_against_null(r, k) for k in ("max", "p90", "median"))
        out.append(
            f"{r['workload']}, preset {r['preset']} ({r['comparison']} comparison), "
            f"`{r['label']}` vs `{r['baseline']}`: {ratios}."
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


def _target_text(training: pd.DataFrame) -> str:
    """How the time-to-accuracy target was set, and its value per control: one sentence."""
    if "target_acc" not in training:
        return ""
    t = training.dropna(subset=["target_acc"])
    if t.empty:
        return (
            " Time to target: none, no exact control evaluated on these recipes."
            if training["final_acc"].notna().any()
            else ""
        )
    if (t["target_of"] == "given").all():
        return f" Time to target: until the first evaluation ≥ {t['target_acc'].iloc[0]:.3f}."
    found = t[["target_of", "target_acc"]].drop_duplicates()
    values = ", ".join(f"{a:.3f} (`{c}`)" for c, a in found.itertuples(index=False))
    return (
        " Time to target: compute plus communication until the first evaluation ≥ "
        f"{TARGET_FRACTION:.0%} of the exact control's mean final accuracy on the same recipe "
        f"(same spec but for the transport and the seed): {values}."
    )


def definitions(training: pd.DataFrame) -> str:
    return (
        "Definitions: a round's latency is the max over ranks (warm-up excluded); in burst = "
        "overlaps an applied burst window; a quantile q needs ≥ 10/(1−q) rounds, else the "
        "table shows the max and says so (`max X (n=N)`; the CSV's `*_rule` column); "
        "[lo, hi] = 95% t-interval over repeats, shown only with ≥ 2 repeats; training time = "
        "compute plus communication (the sum of rank 0's step times; evaluation, shown apart, "
        "and the phase checks between steps excluded); e2e time cut = 1 − the system's "
        "training time / the baseline's, the arithmetic mean over repeats paired by seed with "
        "its t-interval (the geometric mean of the ratios beside it, labelled so) and the max "
        "over the seeds (the "
        f"paper's {fmt_pct(PUBLISHED['e2e_reduction_mean'])} mean and "
        f"{fmt_pct(PUBLISHED['e2e_reduction_max'])} max are over its own settings); Δ final "
        "accuracy = the system's minus the baseline's, in points; hit-round "
        "ratio = per burst event, the latency of the round it hit under the baseline over "
        "under the system, paired by event on the same seed: max / p90 / median over events "
        f"(the paper's {fmt_ratio(PUBLISHED['event_ratio_max'])} is such a max), each with a "
        "95% bootstrap interval over seeds and beside its null (the same statistic over as "
        "many burst-free rounds); the paper's comparison pairs the transports whose "
        "run.json traits give them the role system and baseline in it, the design comparison "
        "likewise, and the published figures belong to the paper's comparison only; the "
        "paper's statistics use presets that impair the network; only runs with status ok "
        "are aggregated." + _target_text(training)
    )
