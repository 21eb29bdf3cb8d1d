"""The worker CLI end to end on loopback (no root): `python -m workloads.train` as N processes.

~20 steps of the digits CNN with tcp and with dblp at zero loss, same seed: rows valid against
analysis.schema, accuracy above chance, replicas identical, the stdout contract present.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import schema

WORLD = 3
STEPS = 20
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TRAIN_ARGS = ["--steps", str(STEPS), "--epochs", "2", "--batch-size", "16"]
ALLREDUCE_ARGS = ["--workload", "allreduce", "--size-mib", "0.25", "--rounds", "6",
                  "--interval-ms", "5", "--epsilon", "0.05"]  # fmt: skip


def _run(transport: str, out: Path, extra: list[str], world: int = WORLD) -> list[dict]:
    port = _free_port()
    procs = []
    for rank in range(world):
        argv = [sys.executable, "-m", "workloads.train", "--rank", str(rank), "--world",
                str(world), "--master-addr", "127.0.0.1", "--master-port", str(port), "--addr",
                "127.0.0.1", "--transport", transport, "--rate-mbps", "800", "--base-port",
                "53700", "--out", str(out), "--run-id", f"t-{transport}", *extra]  # fmt: skip
        procs.append(subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))  # fmt: skip
    outs = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=150)
            assert p.returncode == 0, stderr[-3000:]
            outs.append(stdout)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    return [json.loads(line) for line in outs[0].splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    res = {}
    for transport in ("tcp", "dblp"):
        out = tmp_path_factory.mktemp(transport)
        res[transport] = (out, _run(transport, out, TRAIN_ARGS))
    return res


def _table(out: Path, table: str, ranks: range) -> pd.DataFrame:
    rows = []
    for r in ranks:
        path = out / f"rank{r}" / f"{table}.jsonl"
        rows += [json.loads(x) for x in path.read_text().splitlines()]
    return schema.validate(table, schema.coerce(table, rows))


@pytest.mark.parametrize("transport", ["tcp", "dblp"])
def test_rows_are_schema_valid_and_complete(runs, transport):
    out, _ = runs[transport]
    steps = _table(out, "steps", range(WORLD))
    rounds = _table(out, "rounds", range(WORLD))
    evals = _table(out, "evals", range(1))
    assert sorted(steps["step"].unique()) == list(range(STEPS))
    assert len(steps) == WORLD * STEPS
    tot = rounds[rounds["stage"] == "total"]
    assert set(tot["transport"]) == {transport}
    assert set(tot["iter"]) == set(range(STEPS))
    assert tot[tot["iter"] == 0]["is_warmup"].all() and not tot[tot["iter"] > 0]["is_warmup"].any()
    # ~20 steps are all warm-up: ε_critical = 0, so every round is exact unless it hit the cap
    assert (tot[~tot["cap_hit"]]["delivered_loss"] == 0).all()
    assert (steps["comm_ms"] > 0).all() and (steps["comm_ms"] <= steps["step_ms"] + 1e-6).all()
    assert evals["step"].iloc[-1] == STEPS
    meta = json.loads((out / "rank0" / "meta.json").read_text())
    assert meta["steps_done"] == STEPS and meta["control_ms"]["n"] >= 2
    assert meta["transport_params"]["transport"] == transport


@pytest.mark.parametrize("transport", ["tcp", "dblp"])
def test_learns_and_replicas_agree(runs, transport):
    evals = _table(runs[transport][0], "evals", range(1))
    assert evals["test_acc"].iloc[-1] > 0.3  # chance is 0.1
    assert (evals["replica_drift"] == 0).all()


def test_dblp_at_zero_loss_matches_tcp_accuracy(runs):
    acc = {t: _table(runs[t][0], "evals", range(1))["test_acc"].iloc[-1] for t in runs}
    assert abs(acc["tcp"] - acc["dblp"]) <= 0.03, acc


@pytest.mark.parametrize("transport", ["tcp", "dblp"])
def test_stdout_contract(runs, transport):
    events = runs[transport][1]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "t0" and kinds[-1] == "done"
    assert isinstance(events[0]["t_s"], float)
    steps = [e for e in events if e["event"] == "step"]
    assert [e["step"] for e in steps] == list(range(STEPS))
    assert {"step", "epoch", "steps_total", "round_ms", "delivered_loss"} <= set(steps[0])
    assert steps[0]["steps_total"] == STEPS
    assert any(e["event"] == "eval" and 0 <= e["test_acc"] <= 1 for e in events)


@pytest.mark.parametrize("transport", ["tcp", "dblp"])
def test_allreduce_workload(tmp_path, transport):
    events = _run(transport, tmp_path, ALLREDUCE_ARGS, world=2)
    rounds = _table(tmp_path, "rounds", range(2))
    steps = _table(tmp_path, "steps", range(2))
    tot = rounds[rounds["stage"] == "total"]
    assert len(tot) == 2 * 6 and set(tot["iter"]) == set(range(6))
    assert (tot["bytes"] > 0).all() and len(steps) == 2 * 6
    if transport == "dblp":
        assert (tot[~tot["is_warmup"]]["epsilon"] == 0.05).all()
    assert [e["event"] for e in events][0] == "t0" and events[-1]["event"] == "done"
    assert sum(e["event"] == "step" for e in events) == 6


def test_resync_restores_identical_replicas_under_loss(tmp_path):
    extra = ["--steps", "10", "--batch-size", "16", "--resync-every", "5", "--drop", "0.2",
             "--phase", "off", "--epsilon", "0.3"]  # fmt: skip
    _run("dblp", tmp_path, extra, world=2)
    rounds = _table(tmp_path, "rounds", range(2))
    lossy = rounds[(rounds["stage"] == "total") & ~rounds["is_warmup"]]
    assert (lossy["delivered_loss"] > 0).all()  # replicas really diverged between resyncs
    evals = _table(tmp_path, "evals", range(1))
    assert evals["step"].iloc[-1] == 10 and evals["replica_drift"].iloc[-1] == 0
