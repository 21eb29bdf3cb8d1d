"""The time-to-accuracy target of each run: TARGET_FRACTION of the exact control's mean final
accuracy on the same recipe (the same spec but for the transport and the seed), so the target
says "as good as the control, nearly" for whatever recipe ran, not a fixed number."""

from __future__ import annotations

import math

import pandas as pd

from analysis.tables.constants import RECIPE_FIELDS, TARGET_FRACTION
from analysis.tables.roles import exact_control


def recipe_keys(runs: pd.DataFrame) -> pd.Series:
    """Per run (by run_id): its recipe as text, workload, preset and RECIPE_FIELDS."""
    key = [
        "|".join([str(r.workload), str(r.preset), *(f"{f}={r.spec.get(f)}" for f in RECIPE_FIELDS)])
        for r in runs.itertuples(index=False)
    ]
    return pd.Series(key, index=runs["run_id"].to_numpy(), name="recipe")


def accuracy_targets(metrics: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per run (index run_id): `target_acc`, TARGET_FRACTION x the mean final accuracy of the
    exact control's runs of its recipe (`roles.exact_control`), and `target_of`, that label;
    NaN and "" for a recipe without a control run that evaluated. metrics: `run_metrics` of
    the runs to take the control's accuracy from (the aggregated ones); runs: the runs frame
    (every run, each gets its recipe's target)."""
    keys = recipe_keys(runs)
    m = metrics.assign(recipe=metrics["run_id"].map(keys))
    m = m[m["final_acc"].notna()]
    by_recipe: dict[str, tuple[float, str]] = {}
    for recipe, g in m.groupby("recipe"):
        control = exact_control(g)
        if control:
            acc = float(g.loc[g["label"] == control, "final_acc"].mean())
            by_recipe[recipe] = (round(TARGET_FRACTION * acc, 4), control)
    rows = [by_recipe.get(k, (math.nan, "")) for k in keys]
    return pd.DataFrame(rows, index=keys.index, columns=["target_acc", "target_of"])
