"""Provenance (issue 19): the source tree a run records, the report's flags for runs from a
dirty tree or another commit than the newest, and `make reproduce`'s refusal of a dirty tree."""

import os
import subprocess

import pytest
from synthetic_runs import write_run

from analysis.load import load_runs
from analysis.provenance import BY_GIT, BY_START, git_newest, provenance
from analysis.report import write_report
from analysis.schema import read_run_info, write_run_info
from testbed.base.sourcetree import source_tree
from testbed.sweeps.clean_tree import LOG_NAME, refuse_dirty_tree


def git(repo, *args, date=None):
    """git in `repo`; `date` pins the commit's dates (git orders commits by them)."""
    env = {**os.environ, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                         check=True, env=env)  # fmt: skip
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "src"
    r.mkdir()
    git(r, "init", "-q")
    git(r, "config", "user.email", "t@t")
    git(r, "config", "user.name", "t")
    (r / "code.py").write_text("x = 1\n")
    git(r, "add", "code.py")
    git(r, "commit", "-qm", "one", date="2024-01-01T00:00:00Z")
    return r


def commit(repo, text, date):
    (repo / "code.py").write_text(text)
    git(repo, "commit", "-qam", text, date=date)
    return git(repo, "rev-parse", "HEAD")


# ---- the source tree ------------------------------------------------------------------------


def test_source_tree_reads_head_and_tracked_changes_only(repo, tmp_path):
    clean = source_tree(repo)
    assert clean.commit == git(repo, "rev-parse", "HEAD") and not clean.dirty
    (repo / "results.parquet").write_text("untracked: a run written into the tree")
    assert not source_tree(repo).dirty
    (repo / "code.py").write_text("x = 2\n")
    assert source_tree(repo).changes == (" M code.py",)
    nowhere = source_tree(tmp_path / "not-a-repo")
    assert (nowhere.commit, nowhere.dirty) == ("", False)


# ---- make reproduce's refusal ---------------------------------------------------------------


def test_a_dirty_tree_is_refused_unless_allowed_and_then_recorded(repo, tmp_path):
    out = tmp_path / "out"
    assert refuse_dirty_tree(out, allow_dirty=False, repo=repo) is None
    (repo / "code.py").write_text("x = 2\n")
    msg = refuse_dirty_tree(out, allow_dirty=False, repo=repo)
    assert "uncommitted changes (code.py)" in msg and "--allow-dirty" in msg
    assert not out.exists()  # a refusal writes nothing
    head = git(repo, "rev-parse", "HEAD")
    for _ in range(2):
        assert refuse_dirty_tree(out, allow_dirty=True, repo=repo) is None
    log = (out / LOG_NAME).read_text().splitlines()
    assert len(log) == 2 and all(f"--allow-dirty at {head}: code.py" in line for line in log)
    assert refuse_dirty_tree(out, allow_dirty=False, repo=tmp_path / "no-git") is None


def test_reproduce_main_exits_2_on_the_refusal_and_passes_allow_dirty(monkeypatch, tmp_path):
    from testbed.sweeps import reproduce, sweep_runner

    seen = []

    def refuse(out, allow_dirty):
        seen.append((out, allow_dirty))
        return "make reproduce: the source tree has uncommitted changes"

    def never(*a, **k):
        raise AssertionError("the plan ran")

    monkeypatch.setattr(reproduce.os, "geteuid", lambda: 0)
    monkeypatch.setattr(reproduce, "refuse_dirty_tree", refuse)
    monkeypatch.setattr(sweep_runner, "run_plan", never)
    assert reproduce.main(["--out", str(tmp_path)]) == 2
    assert reproduce.main(["--out", str(tmp_path), "--allow-dirty"]) == 2
    assert seen == [(tmp_path, False), (tmp_path, True)]


# ---- the report's flags ---------------------------------------------------------------------

A, B = "a" * 40, "b" * 40


def runs_with(tmp_path, provenance_of):
    """Synthetic runs whose run.json says (commit, dirty, start time)."""
    dirs = []
    for run_id, (commit_, dirty, started) in provenance_of.items():
        d = write_run(tmp_path / "runs", run_id, seed=len(dirs), n_rounds=30)
        info = read_run_info(d).model_copy(
            update={"git_commit": commit_, "git_dirty": dirty, "realtime_anchor_s": started}
        )
        write_run_info(d, info)
        dirs.append(d)
    return dirs


def test_the_report_names_and_counts_dirty_runs_and_runs_of_other_commits(tmp_path):
    dirs = runs_with(tmp_path, {
        "r1": (A, False, 1.0),  # the older commit
        "r2": (B, False, 2.0),
        "r3": (B, True, 3.0),  # the newest commit, from a dirty tree
        "r4": ("", False, 4.0),  # recorded none
    })  # fmt: skip
    rep = write_report(dirs, tmp_path / "report")
    assert any(w.startswith("1 of 4 runs made from a DIRTY tree") and "`r3`" in w
               for w in rep.warnings)  # fmt: skip
    assert (
        f"2 of 4 runs made from a commit other than the newest among the runs, `{B[:10]}` "
        "(`r1`, `r4`)"
    ) in rep.warnings
    text = rep.path.read_text()
    section = text[text.index("### Provenance"):]  # fmt: skip
    assert f"newest commit among the runs: `{B[:10]}` (by {BY_START})" in section
    assert "- 1 of 4 runs from a dirty tree: `r3`" in section
    assert f"- 2 of 4 runs from another commit: `r1` (`{A[:10]}`), `r4` (none recorded)" in section


def test_one_clean_commit_is_said_and_not_warned(tmp_path):
    rep = write_report(runs_with(tmp_path, {"r1": (A, False, 1), "r2": (A, False, 2)}),
                       tmp_path / "report")  # fmt: skip
    assert not [w for w in rep.warnings if "commit" in w or "DIRTY" in w]
    assert f"All 2 runs were made from commit `{A[:10]}`, clean." in rep.path.read_text()


def test_git_dates_the_commits_when_it_knows_them(repo, tmp_path):
    old = git(repo, "rev-parse", "HEAD")
    new = commit(repo, "x = 2\n", "2024-02-01T00:00:00Z")
    assert git_newest([old, new], repo) == new == git_newest([new, old], repo)
    assert git_newest([old, B], repo) is None  # a commit this checkout does not hold
    # the newer commit's run started first (a re-run of the older code came later): git wins
    dirs = runs_with(tmp_path, {"new": (new, False, 1.0), "old": (old, False, 2.0)})
    prov = provenance(load_runs(dirs).runs, lambda c: git_newest(c, repo))
    assert (prov.newest, prov.rule, prov.other, prov.dirty) == (new, BY_GIT, ("old",), ())
    # without git's answer, the run that started last names the newest commit
    prov = provenance(load_runs(dirs).runs, lambda c: None)
    assert (prov.newest, prov.rule, prov.other) == (old, BY_START, ("new",))
