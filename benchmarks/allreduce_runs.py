"""One `testbed run --workload allreduce --burst none --json` as a benchmark step, and the
fidelity figures a benchmark row prints from its summary."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

RUN_TIMEOUT_S = 1800


def allreduce_argv(label: str, *flags: str) -> list[str]:
    """The `testbed run` command line of one benchmark step."""
    return [
        sys.executable, "-m", "testbed.cli", "run", "--workload", "allreduce",
        "--burst", "none", "--label", label, "--json", *flags,
    ]  # fmt: skip


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
