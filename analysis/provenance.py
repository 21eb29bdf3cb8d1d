"""Which runs a report cannot tie to the code it describes: made from a dirty tree, or from a
commit other than the newest among the report's runs.

Issue 19 found 32 of a reproduction's 42 runs made from a dirty tree and every run older than
the data path then the default; the report said nothing. run.json records `git_commit` and
`git_dirty` (testbed/base/sourcetree.py); here they are compared across the runs.

The newest commit is the one git dates latest (`git rev-list --no-walk`, in this checkout);
when git does not know every commit (no git, a shallow or foreign checkout) it is the commit of
the run that started last (run.json `realtime_anchor_s`), and the report says which rule it
used. A run that recorded no commit is flagged with the older ones when others recorded one:
nothing ties it to the newest.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

#: This checkout's root, whose git dates the commits.
REPO = Path(__file__).resolve().parents[1]

BY_GIT = "git's commit dates"
BY_START = "the run that started last (git does not know every commit)"


@dataclass(frozen=True)
class Provenance:
    newest: str  # the newest commit among the runs; "" when no run recorded one
    rule: str  # how `newest` was chosen (BY_GIT or BY_START); "" with one commit or none
    dirty: tuple[str, ...]  # run ids made from a tree with uncommitted changes
    other: tuple[str, ...]  # run ids made from another commit than `newest`, or from none
    commit_of: dict[str, str]  # run id -> its commit ("" when it recorded none)

    @property
    def flagged(self) -> tuple[str, ...]:
        """Every run flagged for either reason, once, in run-id order."""
        return tuple(sorted(set(self.dirty) | set(self.other)))


def git_newest(commits: Sequence[str], repo: Path = REPO) -> str | None:
    """The commit git dates latest among `commits`; None when git cannot tell (no git, or a
    commit this checkout does not hold)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-list", "--no-walk=sorted", *commits],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split()
    return lines[0] if out.returncode == 0 and lines else None


def provenance(
    runs: pd.DataFrame, newest_of: Callable[[Sequence[str]], str | None] = git_newest
) -> Provenance:
    """Compare the runs' recorded commits and trees (runs: the runs frame of analysis.load)."""
    r = runs.sort_values("run_id")
    commit_of = dict(zip(r["run_id"], r["git_commit"].fillna(""), strict=True))
    dirty = tuple(r.loc[r["git_dirty"].astype(bool), "run_id"])
    commits = sorted({c for c in commit_of.values() if c})
    if not commits:
        return Provenance("", "", dirty, (), commit_of)
    newest, rule = commits[0], ""
    if len(commits) > 1:
        newest, rule = newest_of(commits), BY_GIT
        if newest not in commits:
            last = r[r["git_commit"].fillna("") != ""].sort_values(["started_s", "run_id"])
            newest, rule = last["git_commit"].iloc[-1], BY_START
    other = tuple(i for i, c in commit_of.items() if c != newest)
    return Provenance(newest, rule, dirty, other, commit_of)
