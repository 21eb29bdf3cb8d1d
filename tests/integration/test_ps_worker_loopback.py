"""`--collective ps` end to end on loopback (no root): 3 `python -m workloads.train` workers and
`python -m workloads.ps_server`, launched as the testbed launches them (the server after the
workers, joining through rank 0's rendezvous store)."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import schema

WORKERS = 3
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(out: Path, extra: list[str]) -> list[dict]:
    port = _free_port()
    common = ["--world", str(WORKERS), "--master-addr", "127.0.0.1", "--master-port", str(port),
              "--addr", "127.0.0.1", "--collective", "ps", "--rate-mbps", "400",
              "--base-port", "53900", "--out", str(out), "--run-id", "t-ps", *extra]  # fmt: skip
    argvs = [[sys.executable, "-m", "workloads.train", "--rank", str(r), *common]
             for r in range(WORKERS)]  # fmt: skip
    argvs.append([sys.executable, "-m", "workloads.ps_server", *common])
    procs = [subprocess.Popen(a, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for a in argvs]  # fmt: skip
    outs = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=200)
            assert p.returncode == 0, stderr[-3000:]
            outs.append(stdout)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    return [json.loads(line) for line in outs[0].splitlines() if line.startswith("{")]


def _rows(path: Path, table: str) -> pd.DataFrame:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    return schema.validate(table, schema.coerce(table, rows))


def _table(out: Path, table: str) -> pd.DataFrame:
    return pd.concat([_rows(out / f"rank{r}" / f"{table}.jsonl", table) for r in range(WORKERS)])


@pytest.mark.timeout(300)
def test_allreduce_workload_through_the_server(tmp_path):
    extra = ["--workload", "allreduce", "--transport", "dblp", "--size-mib", "0.25",
             "--rounds", "6", "--interval-ms", "5", "--epsilon", "0.4", "--drop", "0.3",
             "--stop", "early", "--control", "tcp"]  # fmt: skip
    events = _run(tmp_path, extra)
    assert events[0]["event"] == "t0" and events[-1]["event"] == "done"
    tot = _table(tmp_path, "rounds").query("stage == 'total'")
    assert len(tot) == WORKERS * 6 and (tot["delivered_loss"] <= 0.4 + 1e-3).all()
    server = _rows(tmp_path / "server" / "rounds.jsonl", "rounds").query("stage == 'total'")
    assert set(server["rank"]) == {WORKERS}
    assert len(server) == 6 + 6  # the measured rounds, after 5 calibration rounds and their max
    measured = server.tail(6)
    assert measured["is_warmup"].tolist() == [True] + [False] * 5  # as the workers' iteration 0
    lossy = measured[~measured["is_warmup"]]
    assert (lossy["epsilon"] == 0.4).all() and (lossy["train_phase"] == "stable").all()
    assert (measured["delivered_loss"] <= 0.4 + 1e-3).all()
    assert (measured["pkts_expected"] > 0).all() and not measured["cap_hit"].any()
    meta = json.loads((tmp_path / "server" / "meta.json").read_text())
    assert meta["role"] == "server" and meta["rounds"] == 12 and meta["workers"] == WORKERS
    worker = json.loads((tmp_path / "rank0" / "meta.json").read_text())["transport_params"]
    assert worker["collective"] == "ps" and worker["world"] == WORKERS


@pytest.mark.timeout(300)
def test_training_learns_with_identical_replicas(tmp_path):
    _run(tmp_path, ["--steps", "20", "--epochs", "2", "--batch-size", "16", "--transport", "dblp"])
    evals = _rows(tmp_path / "rank0" / "evals.jsonl", "evals")
    assert evals["step"].iloc[-1] == 20 and (evals["replica_drift"] == 0).all()
    assert evals["test_acc"].iloc[-1] > 0.3  # chance is 0.1
    tot = _table(tmp_path, "rounds").query("stage == 'total'")
    assert set(tot["iter"]) == set(range(20)) and (tot["delivered_loss"] == 0).all()
