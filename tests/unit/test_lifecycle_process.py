"""A whole `run_experiment` in a child process, signalled while it runs, merges or writes
run.json. No root and no namespaces: the child's network part (`_execute`) is a stand-in.

No sleeps set the timing: the child says where it is (a line on stdout) and acknowledges each
signal as its handler takes it; where it must stay put until signalled, it waits for the test's
"go" on stdin (bounded), which the test sends once its signals were acknowledged.
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
import inspect, select, signal, sys
from pathlib import Path
from analysis import schema
from testbed.run import experiment, results
from testbed.spec import RunSpec

mode, out = sys.argv[1], Path(sys.argv[2])

def say(what):
    print(what, flush=True)

def wait_for_go():
    \"\"\"Stay until the test says go (at most 20 s); a handler may raise meanwhile.\"\"\"
    ready, _, _ = select.select([sys.stdin], [], [], 20)
    return bool(ready) and sys.stdin.readline().strip() == "go"

real_signal = signal.signal
def acknowledging(signum, handler):
    \"\"\"Every handler installed says which signal it took, once it has acted on it (or
    raised): acknowledged before, the next signal could run inside this handler first.\"\"\"
    if not callable(handler):
        return real_signal(signum, handler)
    def handle(s, frame):
        try:
            return handler(s, frame)
        finally:
            say(f"got {signal.Signals(s).name}")
    return real_signal(signum, handle)
signal.signal = acknowledging

def fake_execute(p, info, run_dir, emit):
    if mode == "run":
        say("running")
        wait_for_go()
    elif mode == "network":
        from testbed.network.live import _Signals
        with _Signals() as signals:
            signals.live()
            say("running")
            wait_for_go()

merge = results.merge_rank_tables
def slow_merge(run_dir):
    say("merging")
    if mode in ("merge", "merge2") and wait_for_go():
        say("merge went on")
    return merge(run_dir)

write = schema.write_run_info
def slow_write(run_dir, info):
    if info.status != "running" and mode == "write":
        say("writing")
        wait_for_go()
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
    """Run the child in `mode`; at its line `at`, send `signals`, each once the child took the one
    before; then tell it to go on; return (returncode, stdout, run.json, stderr)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(tmp_path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: list[str] = []

        def read_until(wanted: str) -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                line = child.stdout.readline()
                assert line, f"child ended before {wanted!r}: {lines} {child.stderr.read()[-2000:]}"
                lines.append(line.strip())
                if line.strip() == wanted:
                    return
            raise AssertionError(f"no {wanted!r} from the child within 60 s: {lines}")

        read_until(at)
        for signum in signals:
            child.send_signal(signum)
            read_until(f"got {signal.Signals(signum).name}")
        out, err = child.communicate("go\n", timeout=60)
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
    code, out, info, err = _signalled_run(
        tmp_path, "merge2", "merging", [signal.SIGTERM, signal.SIGINT]
    )
    assert "merge went on" not in out, "the merge was not cut short"
    assert code == 0, err[-2000:]
    assert info["status"] == "interrupted" and "received SIGTERM while merging" in info["reason"]
    assert any("merge cut short by SIGINT" in w for w in info["warnings"])


def test_a_signal_while_run_json_is_written_is_handed_on_after_it(tmp_path):
    code, out, info, _err = _signalled_run(tmp_path, "write", "writing", [signal.SIGTERM])
    assert code == -signal.SIGTERM  # the default SIGTERM action, once run.json was final
    assert info["status"] == "ok"  # the run had finished before the signal came
    assert "outcome" not in out
