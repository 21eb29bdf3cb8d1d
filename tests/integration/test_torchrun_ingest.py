"""A torchrun job becomes a run folder a report reads: `testbed ingest` over its rank folders.

The slow test runs the worker under torchrun (2 local ranks, c10d rendezvous on loopback; no
root, no namespaces: each rank binds the address that routes to MASTER_ADDR, 127.0.0.1, and its
UDP ports base + rank x ports_per_peer, so both ranks share the host), copies the ranks into
two folders as if from two machines, ingests and reports them. The fast tests feed `ingest`
folders that are not one job.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.load import load_run
from testbed.cli import app
from testbed.run import ingest
from workloads.transport.loopback import free_tcp_port, pick_udp_base

ROOT = Path(__file__).resolve().parents[2]
ROUNDS, WORLD = 10, 2
runner = CliRunner()


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    """One torchrun job's --out folder (rank0/, rank1/)."""
    out = tmp_path_factory.mktemp("torchrun") / "out"
    torchrun = Path(sys.executable).parent / "torchrun"
    argv = [str(torchrun), "--nnodes", "1", "--nproc-per-node", str(WORLD), "--rdzv-backend",
            "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_tcp_port()}", "-m", "workloads.train",
            "--workload", "allreduce", "--transport", "dblp", "--rounds", str(ROUNDS),
            "--size-mib", "0.25", "--base-port", str(pick_udp_base(WORLD, 4, random.Random())),
            "--out", str(out)]  # fmt: skip
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.mark.slow
def test_torchrun_job_is_ingested_and_reported(job, tmp_path):
    # as if copied from two machines: one folder per node
    for rank in range(WORLD):
        shutil.copytree(job / f"rank{rank}", tmp_path / f"node{rank}" / f"rank{rank}")
    run_dir = tmp_path / "tr-run"
    res = runner.invoke(app, ["ingest", str(tmp_path / "node0"), str(tmp_path / "node1"),
                              "--out", str(run_dir)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert f"next: testbed report {run_dir}" in res.output

    info = json.loads((run_dir / "run.json").read_text())
    host = socket.gethostname()
    assert info["status"] == "ok" and info["run_id"] == "tr-run"
    assert info["worker_hosts"] == {"0": host, "1": host}
    assert info["spec"]["rounds"] == ROUNDS and info["spec"]["label"] == "dblp (torchrun)"
    assert info["versions"]["torch"] and info["versions"]["python"]
    assert info["preset"] == "none" and info["flow_paths"] == [] and info["capabilities"] == {}
    assert any(w.startswith("torchrun run: 2 ranks on") for w in info["warnings"])
    assert not (run_dir / "bursts.parquet").exists()

    runs = load_run(run_dir)
    total = runs.rounds[runs.rounds["stage"] == "total"]
    assert total.groupby("rank")["iter"].nunique().to_dict() == {0: ROUNDS, 1: ROUNDS}
    assert len(runs.steps) == ROUNDS * WORLD and set(runs.steps["run_id"]) == {"tr-run"}

    rep = runner.invoke(app, ["report", str(run_dir)])
    assert rep.exit_code == 0, rep.output
    per_run = pd.read_csv(run_dir / "tables" / "runs.csv")
    assert per_run.loc[0, "label"] == "dblp (torchrun)" and per_run.loc[0, "steps"] == ROUNDS
    warmup = int(total.loc[total["rank"] == 0, "is_warmup"].sum())
    assert per_run.loc[0, "rounds"] == ROUNDS - warmup  # the report's rounds: max over 2 ranks
    assert per_run.loc[0, "bursts"] == 0
    assert "dblp (torchrun)" in (run_dir / "report.md").read_text()


# -- folders that are not one job (fast, no torchrun) ------------------------------------

META = {
    "rank": 0, "world": 2, "master": "10.0.0.1:29500", "host": "a", "boot_id": "A",
    "started": {"realtime_s": 1000.0, "monotonic_s": 50.0}, "versions": {"torch": "2"},
    "spec": {"workload": "allreduce", "transport": "tcp", "rounds": 2, "seed": 0},
}  # fmt: skip


def _rank(root: Path, rank: int, steps: int = 2, **meta) -> Path:
    d = root / f"rank{rank}"
    d.mkdir(parents=True)
    m = copy.deepcopy(META) | {"rank": rank} | meta
    (d / "meta.json").write_text(json.dumps(m))
    rows = [{"run_id": "manual", "rank": rank, "step": s, "epoch": 0, "t_start_s": 60.0 + s,
             "compute_ms": 1.0, "comm_ms": 1.0, "step_ms": 2.0, "train_loss": 0.0, "lr": 0.0}
            for s in range(steps)]  # fmt: skip
    (d / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def _ingest(*dirs: Path, out: Path) -> tuple[int, str]:
    res = runner.invoke(app, ["ingest", *map(str, dirs), "--out", str(out)])
    return res.exit_code, res.stderr


@pytest.mark.parametrize(
    ("ranks", "needle"),
    [
        ([{"rank": 0}], "missing rank(s) 1 of world 2"),
        ([{"rank": 0}, {"rank": 1, "world": 3}], "the ranks disagree on the world size"),
        ([{"rank": 0}, {"rank": 1, "spec": {**META["spec"], "rounds": 5}}],
         "ran another spec than rank 0"),
        ([{"rank": 0}, {"rank": 1, "master": "10.0.0.2:29500"}], "not one rendezvous"),
        ([{"rank": 0}, {"rank": 1, "started": {"realtime_s": 9000.0, "monotonic_s": 1.0}}],
         "started 8000 s after rank 0"),
    ],
)  # fmt: skip
def test_not_one_job_exits_2_naming_it(tmp_path, ranks, needle):
    dirs = [_rank(tmp_path / f"m{i}", **r) for i, r in enumerate(ranks)]
    code, err = _ingest(*(d.parent for d in dirs), out=tmp_path / "run")
    assert code == 2 and needle in err, err
    assert not (tmp_path / "run").exists()


def test_duplicate_rank_and_appended_rows_and_old_workers(tmp_path):
    a, b = _rank(tmp_path / "m0", 0), _rank(tmp_path / "m1", 0)
    code, err = _ingest(a.parent, b.parent, out=tmp_path / "run")
    assert code == 2 and "rank 0 given 2 times" in err and "missing rank(s) 1" in err

    c = _rank(tmp_path / "m2", 1)
    with open(c / "steps.jsonl", "a") as f:  # a second job into the same --out
        f.write((c / "steps.jsonl").read_text())
    code, err = _ingest(a, c, out=tmp_path / "run")
    assert code == 2 and "more than once" in err and "its own --out" in err
    assert not (tmp_path / "run").exists()

    old = tmp_path / "old" / "rank0"
    old.mkdir(parents=True)
    (old / "meta.json").write_text(json.dumps({"rank": 0, "world": 1}))
    code, err = _ingest(old, out=tmp_path / "run")
    assert code == 2 and "older than `testbed ingest`" in err


def test_two_machines_clocks_and_a_short_rank(tmp_path):
    a = _rank(tmp_path / "m0", 0)
    # machine b: another boot, its monotonic clock 500 s behind a's at the same wall time
    b = _rank(tmp_path / "m1", 1, steps=1, host="b", boot_id="B",
              started={"realtime_s": 1001.0, "monotonic_s": -449.0})  # fmt: skip
    ranks = ingest.find_rank_dirs([a.parent, b.parent])
    assert [r.offset_s(ranks[0]) for r in ranks] == [0.0, 500.0]
    info = ingest.ingest_job([a.parent, b.parent], tmp_path / "run")
    assert info.status == "failed" and "rank 1 recorded 1 of 2 steps" in info.reason
    assert any("ranks on 2 machines" in w for w in info.warnings)
    steps = load_run(tmp_path / "run").steps
    assert steps.loc[steps["rank"] == 1, "t_start_s"].tolist() == [560.0]


def test_report_of_rank_folders_points_at_ingest(tmp_path):
    a = _rank(tmp_path / "m0", 0)
    res = runner.invoke(app, ["report", str(a.parent)])
    assert res.exit_code == 2 and "testbed ingest DIR... --out RUN_DIR" in res.stderr
