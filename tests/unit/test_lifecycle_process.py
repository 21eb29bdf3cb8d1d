"""A whole `run_experiment` in a child process, signalled while it runs, merges or writes
run.json. No root and no namespaces: the child's network part (`_execute`) is a stand-in.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import inspect, sys, time
from pathlib import Path
from analysis import schema
from testbed.run import experiment, results
from testbed.spec import RunSpec

mode, out = sys.argv[1], Path(sys.argv[2])

def say(what):
    print(what, flush=True)

def fake_execute(p, info, run_dir, emit):
    if mode == "run":
        say("running")
        time.sleep(20)
    elif mode == "network":
        from testbed.network.live import _Signals
        with _Signals() as signals:
            signals.live()
            say("running")
            time.sleep(20)

merge = results.merge_rank_tables
def slow_merge(run_dir):
    say("merging")
    time.sleep({"merge": 1.5, "merge2": 20}.get(mode, 0))
    return merge(run_dir)

write = schema.write_run_info
def slow_write(run_dir, info):
    if info.status != "running" and mode == "write":
        say("writing")
        time.sleep(1.5)
    return write(run_dir, info)

experiment._execute = fake_execute
results.merge_rank_tables = slow_merge
schema.write_run_info = slow_write
spec = RunSpec(out=out)
# run_experiment takes plan(spec) once the harness change that hands it a Plan is in; before, spec
takes_plan = "p" in inspect.signature(experiment.run_experiment).parameters
outcome = experiment.run_experiment(experiment.plan(spec) if takes_plan else spec, out, run_id="r")
say(f"outcome {outcome.status}")
"""


def _signalled_run(tmp_path: Path, mode: str, at: str, signals: list[int]):
    """Run the child in `mode`; at its line `at`, send `signals`; return (returncode, stdout,
    run.json)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            assert line, f"child ended before {at!r}: {lines} {child.stderr.read()[-2000:]}"
            lines.append(line.strip())
            if line.strip() == at:
                break
        for signum in signals:
            child.send_signal(signum)
            time.sleep(0.2)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=5)
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    return child.returncode, "\n".join(lines) + "\n" + out, info, err


def test_sigterm_during_the_run_is_recorded_as_sigterm(tmp_path):
    code, out, info, err = _signalled_run(tmp_path, "run", "running", [signal.SIGTERM])
    assert code == 0, err[-2000:]
    assert (info["status"], info["reason"]) == ("interrupted", "received SIGTERM")
    assert "outcome interrupted" in out


def test_sigterm_inside_the_live_networks_handler_is_recorded_as_sigterm(tmp_path):
    code, out, info, err = _signalled_run(tmp_path, "network", "running", [signal.SIGTERM])
    assert code == 0, err[-2000:]
    assert (info["status"], info["reason"]) == ("interrupted", "received SIGTERM")


def test_sigint_during_the_run_is_recorded_as_sigint(tmp_path):
    code, _out, info, err = _signalled_run(tmp_path, "run", "running", [signal.SIGINT])
    assert code == 0, err[-2000:]
    assert (info["status"], info["reason"]) == ("interrupted", "received SIGINT")


def test_a_sigterm_during_the_merge_waits_for_it_and_ends_interrupted(tmp_path):
    code, out, info, err = _signalled_run(tmp_path, "merge", "merging", [signal.SIGTERM])
    assert code == 0, err[-2000:]
    assert info["status"] == "interrupted"
    assert info["reason"] == "received SIGTERM while merging the results (the run had finished ok)"
    assert not any("cut short" in w for w in info["warnings"])
    assert (tmp_path / "r" / "rounds.parquet").exists()  # the merge went through


def test_a_second_signal_cuts_the_merge_short_and_run_json_is_still_final(tmp_path):
    started = time.monotonic()
    code, _out, info, err = _signalled_run(
        tmp_path, "merge2", "merging", [signal.SIGTERM, signal.SIGINT]
    )
    assert time.monotonic() - started < 15, "the merge was not cut short"
    assert code == 0, err[-2000:]
    assert info["status"] == "interrupted" and "received SIGTERM while merging" in info["reason"]
    assert any("merge cut short by SIGINT" in w for w in info["warnings"])


def test_a_signal_while_run_json_is_written_is_handed_on_after_it(tmp_path):
    code, out, info, _err = _signalled_run(tmp_path, "write", "writing", [signal.SIGTERM])
    assert code == -signal.SIGTERM  # the default SIGTERM action, once run.json was final
    assert info["status"] == "ok"  # the run had finished before the signal came
    assert "outcome" not in out
