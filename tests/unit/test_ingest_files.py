"""`testbed ingest` on synthetic rank folders that are not what they should be: ranks started
too far apart, symlinks and special files, malformed meta.json, rows torn mid-file. Each bad
case exits 2 with one line naming the file or field, and leaves no run folder."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli import app

runner = CliRunner()

META = {
    "rank": 0, "world": 2, "master": "10.0.0.1:29500", "host": "a", "boot_id": "A",
    "started": {"realtime_s": 1000.0, "monotonic_s": 50.0}, "versions": {"torch": "2"},
    "spec": {"workload": "allreduce", "transport": "tcp", "rounds": 2, "seed": 0},
}  # fmt: skip


def _rank(root: Path, rank: int, **meta) -> Path:
    d = root / f"rank{rank}"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps(copy.deepcopy(META) | {"rank": rank} | meta))
    rows = [{"run_id": "manual", "rank": rank, "step": s, "epoch": 0, "t_start_s": 60.0 + s,
             "compute_ms": 1.0, "comm_ms": 1.0, "step_ms": 2.0, "train_loss": 0.0, "lr": 0.0}
            for s in range(2)]  # fmt: skip
    (d / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


@pytest.fixture
def job(tmp_path) -> tuple[Path, Path]:
    """A good two-rank job, one folder per machine."""
    return _rank(tmp_path / "m0", 0), _rank(tmp_path / "m1", 1)


def _ingest(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out = tmp_path / "run"
    res = runner.invoke(app, ["ingest", *args, "--out", str(out)])
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit | None)
    return res.exit_code, res.stderr, out


def _refused(tmp_path: Path, *args: str) -> str:
    code, err, out = _ingest(tmp_path, *args)
    assert code == 2, err
    (line,) = err.splitlines()
    assert not out.exists()
    return line


def test_a_good_job_is_ok(tmp_path, job):
    code, err, out = _ingest(tmp_path, *(str(d.parent) for d in job))
    assert code == 0, err
    assert json.loads((out / "run.json").read_text())["status"] == "ok"


def test_ranks_started_further_apart_than_the_bound_are_not_one_job(tmp_path):
    a = _rank(tmp_path / "m0", 0)
    b = _rank(tmp_path / "m1", 1, started={"realtime_s": 1060.0, "monotonic_s": 110.0})
    code, err, out = _ingest(tmp_path, str(a), str(b))
    assert code == 2 and "started 60 s after rank 0" in err and "--start-spread" in err
    assert not out.exists()
    code, err, out = _ingest(tmp_path, str(a), str(b), "--start-spread", "120")
    assert code == 0, err


@pytest.mark.parametrize("spread", ["nan", "inf", "-1"])
def test_start_spread_must_be_finite_and_not_negative(tmp_path, job, spread):
    line = _refused(tmp_path, *(str(d) for d in job), "--start-spread", spread)
    assert "--start-spread" in line


def test_a_symlinked_file_in_a_rank_folder_is_refused_not_copied(tmp_path, job):
    secret = tmp_path / "secret"
    secret.write_text("not for the run folder")
    (job[1] / "rounds.jsonl").symlink_to(secret)
    line = _refused(tmp_path, *(str(d.parent) for d in job))
    link = job[1] / "rounds.jsonl"
    assert line == f"error: {link}: a symlink; ingest follows none (copy the file itself)"


def test_a_symlinked_meta_json_or_rank_folder_is_refused(tmp_path, job):
    meta = job[1] / "meta.json"
    real = tmp_path / "meta.json"
    meta.rename(real)
    meta.symlink_to(real)
    assert "a symlink" in _refused(tmp_path, *(str(d.parent) for d in job))
    elsewhere = tmp_path / "elsewhere"
    job[1].rename(elsewhere)
    meta.parent.symlink_to(elsewhere)  # m1/rank1 -> elsewhere
    line = _refused(tmp_path, *(str(d.parent) for d in job))
    assert f"{job[1]}: a symlink" in line


def test_a_fifo_in_a_rank_folder_is_refused_without_hanging(tmp_path, job):
    os.mkfifo(job[0] / "evals.jsonl")
    assert "not a regular file" in _refused(tmp_path, *(str(d) for d in job))


BAD_META = [
    (b"{not json", "cannot read"),
    (b"\xff\xfe\x00garbage", "cannot read"),
    (b"[1, 2]", "not a JSON object"),
    (b"5", "not a JSON object"),
    (json.dumps(META | {"rank": "0"}).encode(), "rank: Input should be a valid integer"),
    (json.dumps(META | {"world": 0}).encode(), "world: Input should be greater than or equal"),
    (json.dumps(META | {"started": {"realtime_s": 1.0}}).encode(), "started.monotonic_s"),
    (json.dumps(META | {"started": [1, 2]}).encode(), "started:"),
    (json.dumps(META | {"started": {"realtime_s": float("nan"), "monotonic_s": 1.0}}).encode(),
     "started.realtime_s: Input should be a finite number"),
    (json.dumps(META | {"spec": "allreduce"}).encode(), "spec:"),
    (json.dumps(META | {"spec": {"workload": "allreduce"}}).encode(), "spec.transport"),
    (json.dumps(META | {"versions": ["2"]}).encode(), "versions:"),
    (json.dumps(META | {"master": None}).encode(), "master:"),
    (json.dumps(META | {"transport_params": "x"}).encode(), "transport_params:"),
    (json.dumps(META | {"transport_params": {"suspect": {"a": "b"}}}).encode(), "suspect.a"),
    (json.dumps(META | {"steps_total": -1}).encode(), "steps_total:"),
    (b" " * ((1 << 20) + 1), "larger than"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "why"), BAD_META)
def test_malformed_meta_json_exits_2_naming_the_file(tmp_path, job, text, why):
    (job[1] / "meta.json").write_bytes(text.replace(b'"rank": 0', b'"rank": 1'))
    line = _refused(tmp_path, *(str(d) for d in job))
    assert line.startswith(f"error: {job[1] / 'meta.json'}") and why in line, line


def test_a_row_without_its_times_exits_2_naming_the_file(tmp_path, job):
    with open(job[0] / "steps.jsonl", "a") as f:
        f.write(json.dumps({"rank": 0, "step": 2}) + "\n")
    line = _refused(tmp_path, *(str(d) for d in job))
    assert line.startswith(f"error: {job[0] / 'steps.jsonl'}: a row without a number")


def test_a_torn_line_mid_file_makes_the_run_partial(tmp_path, job):
    steps = job[1] / "steps.jsonl"
    first, second = steps.read_text().splitlines()
    steps.write_text(f"{first}\n{second[:20]}\n{second}\n")
    code, err, out = _ingest(tmp_path, *(str(d) for d in job))
    assert code == 0, err
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "partial" and f"{steps}:2" in info["reason"]
    rep = runner.invoke(app, ["report", str(out)])
    assert rep.exit_code == 0, rep.output
    assert "1 of 1 runs PARTIAL, not aggregated" in (out / "report.md").read_text()


def test_a_torn_last_line_is_a_killed_writer_and_stays_ok(tmp_path, job):
    with open(job[1] / "steps.jsonl", "a") as f:
        f.write('{"run_id": "manual", "ra')
    code, err, out = _ingest(tmp_path, *(str(d) for d in job))
    assert code == 0, err
    assert json.loads((out / "run.json").read_text())["status"] == "ok"
