"""One `testbed run --json` as a benchmark step (`testbed_run`; an all-reduce without bursts:
`allreduce_run`), and the fidelity figures a benchmark row prints from its summary."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

RUN_TIMEOUT_S = 1800
#: After SIGTERM a run tears its network down and prints its summary; then SIGKILL.
TERM_GRACE_S = 300


class RunFailed(Exception):
    """A `testbed run` that printed no summary: it could not start, or had to be killed."""


def testbed_argv(*flags: str) -> list[str]:
    """`testbed run --json` with these flags, under this interpreter."""
    return [sys.executable, "-m", "testbed.cli", "run", "--json", *flags]


def testbed_run(
    label: str,
    flags: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout_s: float = RUN_TIMEOUT_S,
) -> dict:
    """The run's --json summary, a failed run's too (its `status` says so). Past `timeout_s`
    the run gets SIGTERM, so it cleans up and still prints one, and SIGKILL TERM_GRACE_S later;
    RunFailed (with the end of its stderr) when it printed none."""
    try:
        with subprocess.Popen(
            testbed_argv(*flags), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=None if env is None else dict(env),
        ) as p:  # fmt: skip
            try:
                out, err = p.communicate(timeout=timeout_s)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM here: the run cleans up, then we go
                p.send_signal(signal.SIGINT)
                p.communicate(timeout=TERM_GRACE_S)
                raise
            except subprocess.TimeoutExpired:
                p.terminate()
                try:
                    out, err = p.communicate(timeout=TERM_GRACE_S)
                except subprocess.TimeoutExpired:
                    p.kill()
                    out, err = p.communicate()
    except OSError as e:
        raise RunFailed(f"{label}: testbed run could not start: {e}") from e
    try:
        return json.loads(out)
    except ValueError as e:
        raise RunFailed(
            f"{label}: testbed run printed no summary (exit {p.returncode}):\n{err[-2000:]}"
        ) from e


def allreduce_argv(label: str, *flags: str) -> list[str]:
    """The `testbed run` command line of one all-reduce benchmark step."""
    return testbed_argv("--workload", "allreduce", "--burst", "none", "--label", label, *flags)


def allreduce_run(label: str, *flags: str) -> dict:
    """The run's --json summary; a run that fails without a summary ends the benchmark."""
    done = subprocess.run(
        allreduce_argv(label, *flags), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    return run_summary(label, done.stdout, done.stderr)


def run_summary(label: str, stdout: str, stderr: str) -> dict:
    """A finished run's --json summary from what it printed, or SystemExit with its stderr."""
    if not stdout.strip():
        raise SystemExit(f"{label}: testbed run failed:\n{stderr[-2000:]}")
    return json.loads(stdout)


def calm_bound_ratio(summary: dict) -> float:
    """Calm rounds over their pacing bound (the verdict's figure), NaN when not judged."""
    ratio = (summary.get("fidelity") or {}).get("calm_bound_ratio")
    return float("nan") if ratio is None else float(ratio)


def add_run_arguments(ap: argparse.ArgumentParser, size_mib: float) -> None:
    """The all-reduce a benchmark runs: transport, rounds, bucket size, workers."""
    ap.add_argument("--transport", default="dblp")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--size-mib", type=float, default=size_mib)
    ap.add_argument("--workers", type=int, default=4)
