"""Who is who in a set of runs, as run.json says: each transport's traits and each preset's role
(the runs frame's TRAIT_COLUMNS, analysis/load.py). No table names a transport or a preset; a
new policy that declares its traits lands in the right rows.

- A comparison ("paper": the paper's system vs its fixed-tolerance baseline; "design": the
  design card's system vs its baselines) pairs the transports whose `role_<comparison>` is
  "system" with those whose role is "baseline".
- A preset's role: "calm" (the burst-free reference), "control" (a burst's CPU cost without
  its network effect), "burst" (it impairs the network: the paper's statistics use only these).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.load import COMPARISONS, TRAIT_COLUMNS

PAPER, DESIGN = COMPARISONS
SYSTEM, BASELINE = "system", "baseline"
CALM, CONTROL, BURST = "calm", "control", "burst"
EXACT, BOUNDED_LOSS, BOUNDED_TIME = "exact", "bounded-loss", "bounded-time"
#: Transport trait columns (the preset's role is per run, not per transport).
_TRANSPORT_TRAITS = [c for c in TRAIT_COLUMNS if c != "preset_role"]


def role_column(comparison: str) -> str:
    return f"role_{comparison}"


def labels_in_role(df: pd.DataFrame, comparison: str, role: str) -> list[str]:
    """Sorted labels of the rows (runs) whose transport plays `role` in `comparison`."""
    return sorted(df.loc[df[role_column(comparison)] == role, "label"].unique())


def exact_control(df: pd.DataFrame) -> str:
    """The label runs are held against for accuracy: the exact control (an exact transport that
    takes part in no comparison) first, else any exact one; by label; "" without one."""
    exact = df[df["completion"].eq(EXACT)]
    if exact.empty:
        return ""
    in_none = exact[[role_column(c) for c in COMPARISONS]].eq("").all(axis=1)
    return sorted(zip(~in_none, exact["label"], strict=True))[0][1]


def comparison_order(comparisons: pd.Series) -> pd.Series:
    """A sort key: the paper's comparison first, then the design's."""
    return comparisons.map({c: i for i, c in enumerate(COMPARISONS)})


@dataclass(frozen=True)
class Cast:
    """The traits of every transport and the role of every preset these runs name, for the
    tables whose rows carry only names (comparisons, events, paper)."""

    transports: pd.DataFrame  # index: transport name; columns: the transport trait columns
    presets: dict[str, str]  # preset name -> its role

    @classmethod
    def of(cls, runs: pd.DataFrame) -> Cast:
        """From the runs frame (one row per run)."""
        t = runs.drop_duplicates("transport").set_index("transport")[_TRANSPORT_TRAITS]
        presets = dict(zip(runs["preset"], runs["preset_role"], strict=True))
        return cls(t, presets)

    def role(self, transports: pd.Series, comparisons: pd.Series) -> pd.Series:
        """Each row's transport's role in that row's comparison ("" if it takes no part)."""
        table = self.transports
        return pd.Series(
            [
                str(table.at[t, role_column(c)]) if t in table.index else ""
                for t, c in zip(transports, comparisons, strict=True)
            ],
            index=transports.index,
            dtype="object",
        )

    def completion(self, transports: pd.Series) -> pd.Series:
        """Each row's transport's completion ("" for one these runs lack)."""
        return transports.map(self.transports["completion"].to_dict()).fillna("")

    def bursty(self, presets: pd.Series) -> pd.Series:
        """Rows whose preset impairs the network (role "burst")."""
        return presets.map(self.presets).eq(BURST)

    def has(self, comparison: str, role: str) -> bool:
        """Whether any of these runs' transports plays `role` in `comparison`."""
        return bool((self.transports[role_column(comparison)] == role).any())
