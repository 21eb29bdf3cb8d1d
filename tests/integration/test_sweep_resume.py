"""A two-run sweep on the real emulated network resumes without redoing the finished run."""

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.require_root, pytest.mark.slow]

SWEEP_TIMEOUT_S = 600


def _sweep(out, cfg):
    argv = [sys.executable, "-m", "testbed.cli", "sweep", "--transports", "tcp,reliable"]
    argv += ["--bursts", "none", "--repeats", "1", "--config", str(cfg), "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=SWEEP_TIMEOUT_S)


def _status(run_dir):
    return json.loads((run_dir / "run.json").read_text())["status"]


def test_two_run_sweep_resumes(tmp_path):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(
        '[run]\nworkload = "allreduce"\nworkers = 2\nrounds = 12\nsize_mib = 0.5\n'
        "interval_ms = 10.0\nseed = 5\n"
    )
    out = tmp_path / "sw"
    first = _sweep(out, cfg)
    assert first.returncode == 0, first.stdout + first.stderr
    runs = sorted(p for p in out.iterdir() if not p.is_symlink() and (p / "run.json").exists())
    assert [p.name.split("-")[0] for p in runs] == ["reliable", "tcp"]
    assert all(_status(p) == "ok" for p in runs)
    assert (out / "report" / "report.md").exists()

    kept, dropped = runs
    kept_mtime = (kept / "run.json").stat().st_mtime_ns
    shutil.rmtree(dropped)  # as if the sweep had died before this run
    second = _sweep(out, cfg)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stderr.count("done before, skipped") == 1
    assert (kept / "run.json").stat().st_mtime_ns == kept_mtime  # not redone
    assert _status(dropped) == "ok"
    info = json.loads((dropped / "run.json").read_text())
    assert info["seed"] == 5 and info["spec"]["seed"] == 5
