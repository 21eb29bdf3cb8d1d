"""The worker's input: the spec the testbed hands a rank survives the worker's own parser."""

from pathlib import Path

import pytest

from testbed.run.launch import Placement, worker_argv, write_worker_spec
from testbed.spec import RunSpec
from workloads import args as worker_args
from workloads.spec import MASTER_PORT, WorkerSpec

IDENTITY = ["--rank", "1", "--world", "4", "--master-addr", "10.0.0.2", "--master-port", "29500",
            "--addr", "10.1.0.2", "--out", "results/x", "--run-id", "r1"]  # fmt: skip


def test_spec_round_trips_through_the_worker_parser(tmp_path):
    spec = RunSpec(
        transport="optireduce", model="resnet", epochs=2, steps=30, batch_size=8, lr=0.05,
        seed=7, threads=2, bucket_cap_mb=4.0, bw=50.0, optireduce_mode="fixed", rescale=True,
        t_max_ms=900.0, resync_every=10, eps_critical=0.01, eps_stable=0.3, base_port=50000,
        checkpoint_every=5, warmup_steps=10, drop=0.02, dilation=2.0,
    )  # fmt: skip
    path = write_worker_spec(spec, tmp_path)
    ns = worker_args.parse_args(["--spec", str(path), *IDENTITY])
    assert ns.spec == spec.worker_spec()
    assert ns.spec.pace_mbps == pytest.approx(0.95 * 50.0)  # the orchestrator resolved the pace
    assert (ns.rank, ns.world, ns.addr, ns.run_id, ns.out) == (1, 4, "10.1.0.2", "r1",
                                                              Path("results/x"))  # fmt: skip


def test_flags_override_the_spec_file(tmp_path):
    path = write_worker_spec(RunSpec(transport="tcp", lr=0.2), tmp_path, 1.0)
    ns = worker_args.parse_args(["--spec", str(path), "--transport", "dblp", "--no-rescale"])
    assert (ns.spec.transport, ns.spec.lr, ns.spec.rescale) == ("dblp", 0.2, False)


def test_by_hand_without_a_spec_file():
    ns = worker_args.parse_args(
        ["--transport", "dblp", "--eps-stable", "0.1", "--rate-mbps", "800"]
    )
    assert (ns.spec.transport, ns.spec.eps_stable, ns.spec.pace_mbps) == ("dblp", 0.1, 800.0)
    assert ns.spec == WorkerSpec(eps_stable=0.1, pace_mbps=800.0)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--lr", "inf"], "--lr"),
        (["--bucket-cap-mb", "nan"], "--bucket-cap-mb"),
        (["--eps-stable", "1"], "--eps-stable"),
        (["--workload", "ping"], "--workload"),
        (["--p-low", "1"], "--p-low"),
        (["--phase", "paper", "--p-gap", "0.995"], "--p-gap"),
        (["--spec", "/nonexistent/spec.json"], "--spec"),
    ],
)
def test_bad_worker_input_exits_2_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as e:
        worker_args.parse_args(argv)
    assert e.value.code == 2
    assert flag in capsys.readouterr().err


def test_worker_argv_is_the_spec_file_and_the_identity(tmp_path):
    placement = Placement(("h1", "h5"), ("10.0.0.2", "10.1.0.2"))
    argv = worker_argv(tmp_path / "worker_spec.json", placement, 1, tmp_path, "r1")
    flags = [a for a in argv if a.startswith("--")]
    assert flags == ["--spec", "--rank", "--world", "--master-addr", "--master-port", "--addr",
                     "--out", "--run-id"]  # fmt: skip
    assert argv[argv.index("--master-port") + 1] == str(MASTER_PORT)
