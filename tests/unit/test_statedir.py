"""State dirs: the start-time check teardown and `testbed clean` share, and create vs clean.

No root, no namespaces: the state root is a temporary folder and every pid is ours.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from testbed.base import statedir
from testbed.base.statedir import INCOMING, OUTGOING, StateDir, start_time, start_time_check
from testbed.network import cleanup

REPO = Path(__file__).resolve().parents[2]


# --- the start-time check (pure) ------------------------------------------------------------


def test_a_recorded_process_with_its_start_time_proves_its_namespace():
    ours = start_time_check([(10, 500)], {7001}, {10: (7001, 500)})
    assert ours.live == (10,) and ours.netns == {7001}


def test_a_reused_pid_proves_nothing_even_in_a_recorded_namespace_inode():
    # pid 10 is another process now (other start time), in a namespace that reused our inode
    ours = start_time_check([(10, 500)], {7001}, {10: (7001, 999)})
    assert ours.live == () and ours.netns == frozenset()


def test_a_gone_or_unreadable_process_proves_nothing():
    assert start_time_check([(10, 500)], {7001}, {10: (None, None)}).live == ()
    assert start_time_check([(10, 500)], {7001}, {}).netns == frozenset()


def test_a_live_process_outside_the_recorded_namespaces_is_live_but_proves_none():
    seen = {10: (4026531840, 500), 11: (7001, 600)}
    ours = start_time_check([(10, 500), (11, 600)], {7001}, seen)
    assert ours.live == (10, 11) and ours.netns == {7001}


def test_a_pid_recorded_twice_is_listed_once():
    ours = start_time_check([(10, 500), (10, 500)], {7001}, {10: (7001, 500)})
    assert ours.live == (10,)


def test_ours_reads_proc_for_this_very_process(tmp_path, monkeypatch):
    monkeypatch.setattr(statedir, "ROOT", tmp_path / "state")
    sd = StateDir.create("t")
    sd.add_proc(os.getpid(), "this test")
    with open(sd.path / "procs", "a") as f:  # the same pid with another start time: reused
        f.write(f"{os.getpid()} {start_time(os.getpid()) + 1} impostor\n")
    assert sd.ours().live == (os.getpid(),)
    assert sd.ours().netns == frozenset()  # no node recorded: no namespace is ours


# --- create vs clean --------------------------------------------------------------------------


@pytest.fixture
def state_root(tmp_path, monkeypatch):
    root = tmp_path / "state"
    monkeypatch.setattr(statedir, "ROOT", root)
    monkeypatch.setattr(cleanup, "_named_netns", lambda: [])  # no `ip netns` here
    return root


def test_create_never_shows_a_dir_without_its_owner(state_root):
    sd = StateDir.create("run1")
    assert sd.path == state_root / "run1"
    assert sd.owner() == (os.getpid(), start_time(os.getpid()))
    assert [p.name for p in state_root.iterdir()] == ["run1"]  # the incoming name is gone


def test_create_on_an_existing_dir_fails_and_leaves_no_incoming_dir(state_root):
    StateDir.create("run1")
    with pytest.raises(FileExistsError):
        StateDir.create("run1")
    assert [p.name for p in state_root.iterdir()] == ["run1"]


def _dead_pid() -> tuple[int, int]:
    p = subprocess.Popen(["sleep", "30"])
    started = start_time(p.pid)
    p.kill()
    p.wait(timeout=5)
    assert started is not None
    return p.pid, started


@pytest.mark.parametrize("prefix", [INCOMING, OUTGOING])
def test_clean_removes_an_abandoned_creation_or_removal_only_if_its_maker_is_gone(
    state_root, prefix
):
    state_root.mkdir()
    pid, started = _dead_pid()
    dead = state_root / f"{prefix}{pid}-{started}-run1"
    live = state_root / f"{prefix}{os.getpid()}-{start_time(os.getpid())}-run2"
    odd = state_root / f"{prefix}garbage"
    for d in (dead, live, odd):
        d.mkdir()
    assert statedir.all_state_dirs() == []  # dirs in transit are not state dirs
    report = cleanup.clean()
    assert report.state_dirs == [str(dead)]
    assert not dead.exists() and live.exists() and odd.exists()


def test_remove_leaves_the_final_name_at_once(state_root):
    sd = StateDir.create("run1")
    sd.add_proc(os.getpid(), "me")
    sd.remove()
    assert list(state_root.iterdir()) == []
    sd.remove()  # twice is harmless


def test_clean_still_removes_a_dir_whose_owner_is_gone(state_root):
    state_root.mkdir()
    pid, started = _dead_pid()
    crashed = state_root / "crashed"
    crashed.mkdir()
    (crashed / "owner").write_text(f"{pid} {started}\n")
    running = StateDir.create("running")
    report = cleanup.clean()
    assert report.state_dirs == [str(crashed)] and report.live_runs == [str(running.path)]
    assert not crashed.exists() and running.path.exists()


def _creates_survive(n: int) -> list[str]:
    """Create, use and remove `n` state dirs; what went wrong (a dir cleaned under us)."""
    problems = []
    for i in range(n):
        try:
            sd = StateDir.create(f"race-{threading.get_ident()}-{i}")
            # fails if a clean took the dir; no live process recorded, so a wrong clean (we
            # run as root in CI) could not kill anything
            (sd.path / "procs").write_text("")
            if not sd.owner_alive():
                problems.append(f"{sd.path}: owner not alive")
            sd.remove()
        except OSError as e:
            problems.append(repr(e))
    return problems


def test_a_concurrent_clean_never_deletes_a_dir_being_created(state_root):
    """Two threads, switching as often as the interpreter allows: one creates state dirs, the
    other runs `testbed clean`'s selection again and again. Before the rename-into-place, the
    clean saw dirs without an owner file (or with an empty one) and deleted them."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    stop = threading.Event()
    cleans = [0]
    taken: list[str] = []  # state dirs the clean took for a crashed run's

    def clean_loop() -> None:
        while not stop.is_set():
            taken.extend(cleanup.clean().state_dirs)
            cleans[0] += 1

    cleaner = threading.Thread(target=clean_loop)
    try:
        cleaner.start()
        problems = _creates_survive(400)
    finally:
        stop.set()
        cleaner.join(timeout=30)
        sys.setswitchinterval(old)
    assert not cleaner.is_alive()
    assert cleans[0] > 10, "the clean loop barely ran: the test proves nothing"
    assert taken == [] and problems == []


CREATOR = """
import sys
from pathlib import Path
from testbed.base import statedir
sys.path.insert(0, sys.argv[2])
statedir.ROOT = Path(sys.argv[1])
from test_statedir import _creates_survive
problems = _creates_survive(int(sys.argv[3]))
print(len(problems), *problems[:3], sep="\\n")
"""


def test_a_clean_in_another_process_never_deletes_a_dir_being_created(state_root):
    """The same race across processes: the creator is a child, this process cleans."""
    child = subprocess.Popen(
        [sys.executable, "-c", CREATOR, str(state_root), str(Path(__file__).parent), "300"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cleans = 0
    deadline = time.monotonic() + 60
    try:
        while child.poll() is None and time.monotonic() < deadline:
            report = cleanup.clean()
            assert report.state_dirs == [], report
            cleans += 1
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=5)
    assert child.returncode == 0, err[-2000:]
    assert out.splitlines()[0] == "0", out
    assert cleans > 10
