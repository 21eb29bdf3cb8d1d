"""The source tree a run is made from: its commit and its uncommitted changes.

run.json records both (`git_commit`, `git_dirty`), and `make reproduce` refuses a dirty tree:
a number must name the code that made it. Only tracked files count: results are written into
the tree (docs/results/…/runs) and stay untracked until committed, so counting untracked files
would call every resumed reproduction dirty. Without git (an unpacked copy, no git binary) the
commit is "" and the tree is clean: nothing is known, nothing is claimed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

#: This checkout's root (testbed/base/ is two levels down).
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class SourceTree:
    commit: str  # HEAD's hash; "" when git does not know the tree
    changes: tuple[str, ...] = ()  # `git status --porcelain` lines of tracked files

    @property
    def dirty(self) -> bool:
        return bool(self.changes)


def source_tree(repo: Path = REPO) -> SourceTree:
    """HEAD and the tracked files changed against it, in `repo`."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=5
        ).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired):
        return SourceTree("")
    return SourceTree(commit, tuple(line for line in status.splitlines() if line.strip()))
