"""The report's tables, from loaded runs: latency, comparisons, events, paper, timeout axis,
training, phase ablation, loss, validity, sham shift.

Definitions (one place, so every table agrees):
- A round is the `total` rows of one (run, round), warm-up rounds excluded; its latency is the
  max over ranks (a round is done when its slowest rank is), its span min start..max end, its
  delivered loss the mean over ranks. In-burst by `analysis.windows` (applied times).
- Quantiles pool the rounds of all repeats of a group and follow the 10/(1-q) rule.
- Per-run figures (mean in-burst latency, training time, final accuracy, ...) aggregate over
  repeats to mean ± 95% CI. Comparisons pair repeats by repeat index when both sides have the
  same repeats (same seeds, hence the same bursts), else fall back to unpaired intervals.
- In-burst mean ratio = baseline's mean in-burst round latency / the transport's (a ratio of
  means, not the paper's statistic).
  Baselines are the labels whose transport plays "baseline" in a comparison, as run.json's
  transport_traits say (`roles`): the paper's comparison (its system vs its fixed-tolerance
  baseline) and the design's (the system vs the design card's baselines). Every ratio row says
  its `comparison`; the published figures stand beside the paper's comparison only.
- The paper's burst statistic is per event (`event_table`): the hit round's latency under the
  baseline over under the transport, paired by event on the same seed; its max over events
  is what the paper's "up to 5.88x" reports. A max has no confidence interval, so the tables
  give the number of events and seeds it is the max of.
- Training time `train_s` = compute plus communication: the sum of rank 0's step times
  (run.json wall_s for a run without steps); evaluation time `eval_s` apart; the span (first
  step start to last step end, evaluations and phase checks included) is `span_s` in runs.csv.
  Time to accuracy = the training time until the first evaluation at or above the target,
  TARGET_FRACTION of the exact control's final accuracy on the same recipe (`targets`).
- Time cuts (end to end, to accuracy) = the arithmetic mean over paired seeds of
  1 - the transport's time / the baseline's, with a t-interval; the geometric-mean cut sits
  beside it (`*_geo`), labelled so.
- Only runs whose status is ok are aggregated (`Runs.aggregated`): a failed, interrupted or
  still-running run measured part of an experiment (a shorter training, an earlier accuracy),
  so it appears per run (`runs`, `validity`) and is named in its group's `validity` cell
  ("left out: interrupted 1"), never averaged with complete runs.
- Every group table carries `validity`: "unfaithful k/n", "rejected datagrams k/n", ... so a run
  the emulator could not keep up with, or whose transport saw foreign datagrams, is visible
  wherever it was used.
- CSV columns are numbers or text, never both: a quantile column holds the quantile, or the
  maximum when there were too few samples, and its `*_rule` column says which.

- The paper's own tables (`paper_tables`): the burst round with the tail (p99 and max of
  every round) and the average (Tables II–VI), training time over the paper system's with the
  share of rounds hit (Table VIII, the dose-response), and final accuracy as non-inferiority
  against the exact control with a 1-point margin (Table IX).

Layout: `constants` (names every table agrees on), `roles` (who is who, from run.json's
traits and preset roles), `common` (`round_level` and the helpers of a
group row), `metrics` (per-run quantities), then a module per table family; `build_tables` here.
"""

from __future__ import annotations

import pandas as pd

from analysis.load import TRAIT_COLUMNS, Runs
from analysis.tables.common import rejections_text, round_level
from analysis.tables.comparisons import comparisons
from analysis.tables.constants import (
    ADAPTIVE_MODE,
    EVENT_QUANTILES,
    EVENT_STATS,
    FAST_EPSILON,
    GROUP,
    PHASE_AWARE,
    PUBLISHED,
    RECIPE_FIELDS,
    TARGET_FRACTION,
)
from analysis.tables.events import event_rounds, event_table
from analysis.tables.latency import latency_table
from analysis.tables.loss import loss_table
from analysis.tables.metrics import run_metrics
from analysis.tables.paper import paper_comparisons, paper_table
from analysis.tables.paper_tables import (
    burst_latency_table,
    noninferiority_table,
    normalised_time_table,
)
from analysis.tables.params import run_params
from analysis.tables.phase import phase_ablation
from analysis.tables.probes import probe_table
from analysis.tables.roles import Cast
from analysis.tables.sham import sham_table
from analysis.tables.summary import summary
from analysis.tables.targets import accuracy_targets
from analysis.tables.timeout import timeout_axis, timeout_reaching
from analysis.tables.training import training_table
from analysis.tables.validity import validity_table

__all__ = [
    "ADAPTIVE_MODE",
    "EVENT_QUANTILES",
    "EVENT_STATS",
    "FAST_EPSILON",
    "GROUP",
    "PHASE_AWARE",
    "PUBLISHED",
    "RECIPE_FIELDS",
    "TARGET_FRACTION",
    "Cast",
    "build_tables",
    "burst_latency_table",
    "noninferiority_table",
    "normalised_time_table",
    "comparisons",
    "accuracy_targets",
    "event_rounds",
    "event_table",
    "latency_table",
    "loss_table",
    "paper_comparisons",
    "paper_table",
    "phase_ablation",
    "probe_table",
    "rejections_text",
    "round_level",
    "run_metrics",
    "run_params",
    "sham_table",
    "summary",
    "timeout_axis",
    "timeout_reaching",
    "training_table",
    "validity_table",
]


def build_tables(runs: Runs, target_acc: float | None = None) -> dict[str, pd.DataFrame]:
    """Every report table, by name; target_acc None: each run's recipe's target
    (`accuracy_targets`), else that accuracy for every run.

    Group tables aggregate the ok runs only (`Runs.aggregated`); `runs` (per-run
    measurements) and `validity` list every run, with its status."""
    ok, left = runs.aggregated(), runs.left_out()

    def kept(m: pd.DataFrame) -> pd.DataFrame:
        return m[m["run_id"].isin(ok.runs["run_id"])]

    if target_acc is None:
        targets = accuracy_targets(kept(run_metrics(runs)), runs.runs)
        all_metrics = run_metrics(runs, targets["target_acc"].to_dict())
        all_metrics["target_of"] = all_metrics["run_id"].map(targets["target_of"])
    else:
        all_metrics = run_metrics(runs, target_acc).assign(target_of="given")
    metrics = kept(all_metrics)
    comp = comparisons(metrics, left_out=left)
    rl = round_level(ok)
    events = event_table(rl, ok.bursts)
    params = run_params(ok)
    cast = Cast.of(runs.runs)
    return {
        "latency": latency_table(ok, rl, left),
        "comparisons": comp,
        "paper": paper_table(comp, events, cast),
        "events": events,
        "burst_latency": burst_latency_table(rl, ok.bursts),
        "normalised_time": normalised_time_table(metrics),
        "noninferiority": noninferiority_table(metrics),
        "timeout_axis": timeout_axis(rl, ok.bursts, events, params, cast),
        "training": training_table(metrics, left),
        "phase_ablation": phase_ablation(metrics, params, left),
        "loss": loss_table(metrics, left),
        "validity": validity_table(runs, all_metrics),
        "sham_shift": sham_table(rl, ok),
        "probes": probe_table(ok),
        # runs.csv: the measurements; the traits and roles are in each run's run.json
        "runs": all_metrics.drop(columns=list(TRAIT_COLUMNS)),
    }
