"""`make reproduce` starts from a committed tree: its numbers must name the code that made them.

Issue 19 found 32 of a reproduction's 42 runs made from a dirty tree, so no commit says what
produced them. A start from a tree with uncommitted changes to tracked files is refused unless
`--allow-dirty` is given; then the start is appended to OUT/allow-dirty.log (time, commit, the
changed files), committed beside the runs, and the report flags every such run (run.json
`git_dirty`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from testbed.base.sourcetree import REPO, source_tree

#: Where an allowed dirty start is recorded, under the reproduction's OUT.
LOG_NAME = "allow-dirty.log"
#: Changed files named in the refusal before it says "and k more".
NAMED_FILES = 5


def refuse_dirty_tree(out: Path, allow_dirty: bool, repo: Path = REPO) -> str | None:
    """The refusal's message when `repo` has uncommitted changes and `allow_dirty` is False;
    None when the start may go on (a clean tree, no git, or allowed: then recorded)."""
    tree = source_tree(repo)
    if not tree.dirty:
        return None
    files = [line[3:] for line in tree.changes]
    if allow_dirty:
        out.mkdir(parents=True, exist_ok=True)
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        with (out / LOG_NAME).open("a", encoding="utf-8") as log:
            log.write(f"{when} --allow-dirty at {tree.commit or '?'}: {', '.join(files)}\n")
        return None
    named = ", ".join(files[:NAMED_FILES])
    more = f" and {len(files) - NAMED_FILES} more" if len(files) > NAMED_FILES else ""
    return (
        f"make reproduce: the source tree {repo} has uncommitted changes ({named}{more}), so "
        f"no commit would say what made these runs. Commit or stash them, or run "
        f"`make reproduce REPRODUCE_ARGS=--allow-dirty` (recorded in {out / LOG_NAME}; "
        "the report flags the runs)."
    )
