"""Round-aligned loss events (paper-*): seeded hit rounds, the gate that keeps each event on for
exactly its round, and the rank <-> player handshake over a real Unix datagram socket."""

import random
import threading

import pytest

from testbed.bursts import presets
from testbed.bursts.presets import PresetError, RoundPlan, parse_preset
from testbed.bursts.rounds import RoundGate, RoundPlayer
from testbed.bursts.schedule import ScheduleError, generate, hit_rounds
from topologies import fattree
from workloads.round_signal import RoundSignal

TOPO = fattree(4)
WORKERS = ["h1", "h5", "h9", "h13"]
PAPER = [f"paper-{n}" for n in (60, 70, 80, 90)]


@pytest.mark.parametrize("name", PAPER)
def test_paper_presets_hit_2_or_3_seeded_rounds_on_every_worker_downlink(name):
    p = presets.load(name)
    assert p.round_aligned and p.description
    for seed in range(20):
        events = generate(p, TOPO, WORKERS, 10.0, seed, rounds=30)
        hits = sorted({(e.event_id, e.round) for e in events})
        rounds = [r for _, r in hits]
        assert [i for i, _ in hits] == list(range(len(hits)))  # ids in round order
        assert 2 <= len(rounds) <= 3 and rounds == sorted(set(rounds))
        assert all(1 <= r < 30 for r in rounds)  # never the warm-up round 0
        assert all(b - a >= 2 for a, b in zip(rounds, rounds[1:], strict=False))
        for _, r in hits:
            hit = [e for e in events if e.round == r]
            assert {str(e.direction) for e in hit} == {
                "r_e0_0->h1", "r_e1_0->h5", "r_e2_0->h9", "r_e3_0->h13",
            }  # fmt: skip
            assert {e.magnitude for e in hit} == {int(name[-2:]) / 100}


def test_same_seed_same_rounds_other_seeds_other_rounds():
    p = presets.load("paper-90")
    a = generate(p, TOPO, WORKERS, 10.0, 7, rounds=100)
    assert a == generate(p, TOPO, WORKERS, 10.0, 7, rounds=100)
    draws = {tuple(sorted({e.round for e in generate(p, TOPO, WORKERS, 1, s, rounds=100)}))
             for s in range(10)}  # fmt: skip
    assert len(draws) > 5
    # the same rounds whatever the magnitude: paper-60 and paper-90 hit the same rounds
    b = generate(presets.load("paper-60"), TOPO, WORKERS, 10.0, 7, rounds=100)
    assert [e.round for e in a] == [e.round for e in b]


def test_hit_rounds_fit_short_runs_and_refuse_too_short_ones():
    plan = RoundPlan(count=(2, 3), skip=1)
    for seed in range(50):
        assert hit_rounds(plan, random.Random(seed), 4) == [1, 3]  # the only fit for 2
    with pytest.raises(ScheduleError, match="rounds"):
        hit_rounds(plan, random.Random(0), 3)
    with pytest.raises(ScheduleError, match="rounds"):
        generate(presets.load("paper-90"), TOPO, WORKERS, 10.0, 0)  # round count unknown


def test_show_json_lists_the_hit_rounds():
    import json

    from typer.testing import CliRunner

    from testbed.cli.commands.bursts import app

    out = CliRunner().invoke(app, ["show", "paper-90", "--seed", "0", "--json", "--rounds", "40"])
    assert out.exit_code == 0, out.output
    body = json.loads(out.output)
    rounds = sorted({e["round"] for e in body["events"]})
    assert 2 <= len(rounds) <= 3
    assert all("planned_start_s" not in e for e in body["events"])
    listing = CliRunner().invoke(app, ["list"])
    assert "paper-90" in listing.output and "one round" in listing.output


BASE = """
name = "x"
[[streams]]
kind = "loss"
magnitude = 0.9
align = "round"
rounds = { count = [2, 3] }
targets = [{ role = "all_worker_downlinks" }]
"""


@pytest.mark.parametrize(
    "old, new, what",
    [
        ('align = "round"', 'align = "round"\nduration_s = 0.1', "no duration_s"),
        ("rounds = { count = [2, 3] }", "", "rounds"),
        ("count = [2, 3]", "count = [3, 2]", "count"),
        ('kind = "loss"', 'kind = "squeeze"\nmagnitude = 0.5', "loss"),
    ],
)
def test_round_streams_refuse_what_does_not_apply(old, new, what):
    text = BASE.replace(old, new)
    if 'kind = "squeeze"' in text:
        text = text.replace("magnitude = 0.9\n", "", 1)
    with pytest.raises(PresetError, match=what):
        parse_preset(text)


def test_round_and_time_streams_do_not_mix_and_old_hashes_stand():
    text = (
        BASE
        + """
[[streams]]
kind = "loss"
magnitude = 0.1
duration_s = 0.1
arrival = { min_gap_s = 1.0 }
targets = [{ role = "worker_downlink", worker = 0 }]
"""
    )
    with pytest.raises(PresetError, match="mix"):
        parse_preset(text)
    assert presets.load("heavy").hash == "0791c20e8be63c0b"  # the hash before align existed


# ---- the gate --------------------------------------------------------------------------------


def acks(actions):
    return [(a[1], a[2], a[3]) for a in actions if a[0] == "ack"]


def test_gate_acks_calm_rounds_at_once_and_switches_hit_rounds_once_all_began():
    g = RoundGate(world=2, hits=frozenset({2}))
    assert g.begin("a", 0, 0) == [("ack", "a", 0, False)]
    assert g.begin("b", 1, 0) == [("ack", "b", 0, False)]
    g.end(0, 0)
    assert g.begin("a", 0, 1) == [("ack", "a", 1, False)]
    g.end(0, 1)
    # rank 0 reaches the hit round while rank 1 is still in round 1: no loss yet, no ack
    assert g.begin("a", 0, 2) == []
    assert g.end(1, 0) == []
    assert g.begin("b", 1, 1) == [("ack", "b", 1, False)]
    # rank 1 ended round 1 but has not begun round 2 (a Gloo broadcast between rounds): still
    # no loss, or it would hit that broadcast
    assert g.end(1, 1) == []
    assert g.begin("b", 1, 2) == [("on", 2), ("ack", "a", 2, True), ("ack", "b", 2, True)]
    assert g.end(0, 2) == []  # rank 1 is still in the hit round: the loss stays on
    # rank 0 runs ahead: round 3 waits while the loss of round 2 is on
    assert g.begin("a", 0, 3) == []
    assert g.end(1, 2) == [("off", 2), ("ack", "a", 3, False)]
    assert g.begin("b", 1, 3) == [("ack", "b", 3, False)]


def test_gate_never_ons_a_round_twice():
    g = RoundGate(world=1, hits=frozenset({1}))
    g.begin("a", 0, 0)
    g.end(0, 0)
    assert g.begin("a", 0, 1)[0] == ("on", 1)
    assert g.end(0, 1) == [("off", 1)]
    assert g.begin("a", 0, 1) == [("ack", "a", 1, False)]  # a repeat after it ended: no event


# ---- the socket ------------------------------------------------------------------------------


def test_ranks_and_player_over_a_unix_socket(tmp_path):
    log: list[tuple[str, int]] = []
    lock = threading.Lock()

    def note(what):
        def f(r):
            with lock:
                log.append((what, r))

        return f

    player = RoundPlayer(tmp_path / "rounds.sock", 2, {1}, note("on"), note("off"))
    signals = [RoundSignal(tmp_path / "rounds.sock", rank, timeout_s=5) for rank in range(2)]
    seen: list[tuple[str, int, int]] = []

    def rank(i):
        for r in range(3):
            signals[i].begin(r)
            with lock:
                seen.append(("in", i, r) if (("on", r) not in log or ("off", r) in log)
                            else ("hit", i, r))  # fmt: skip
            signals[i].end(r)

    threads = [threading.Thread(target=rank, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    try:
        assert all(s.timeouts == 0 for s in signals)
        assert sorted(x for x in seen if x[0] == "hit") == [("hit", 0, 1), ("hit", 1, 1)]
        deadline = 50
        while ("off", 1) not in log and deadline:
            threading.Event().wait(0.1)
            deadline -= 1
        assert log == [("on", 1), ("off", 1)]
        # each begin's wait for its ack is counted once (the worker books it as communication)
        waited = [s.waited_s for s in signals]
        assert all(w > 0 for w in waited)
        signals[0].begin(2)  # the same round again: a later bucket, no datagram and no wait
        assert signals[0].waited_s == waited[0]
    finally:
        for s in signals:
            s.close()
        player.close()
    assert not (tmp_path / "rounds.sock").exists()


def test_no_socket_no_signal(monkeypatch):
    monkeypatch.delenv("DBLP_ROUND_SOCKET", raising=False)
    assert RoundSignal.from_env(0) is None


def test_train_sizes_match_the_data_sets():
    from workloads import datasets

    assert datasets.TRAIN_SIZES["cnn"] == len(datasets.digits(0).y_train)
    assert datasets.TRAIN_SIZES["resnet"] == len(datasets.synthetic_cifar(0).y_train)


def test_a_failing_switch_still_acks_and_is_raised_at_close(tmp_path):
    def boom(r):
        raise OSError(f"cannot switch round {r}")

    player = RoundPlayer(tmp_path / "rounds.sock", 1, {1}, boom, boom)
    sig = RoundSignal(tmp_path / "rounds.sock", 0, timeout_s=5)
    try:
        for r in range(3):
            sig.begin(r)
            sig.end(r)
        assert sig.timeouts == 0
    finally:
        sig.close()
        with pytest.raises(RuntimeError, match="cannot switch round 1"):
            player.close()


def test_a_run_plans_its_hit_rounds_from_its_round_count():
    from testbed.run.plan import plan, run_rounds
    from testbed.spec import RunSpec, SpecError

    ar = RunSpec(workload="allreduce", rounds=12, workers=3, burst="paper-80", dilation=1)
    p = plan(ar)
    assert {e.round for e in p.events} == {
        e.round for e in generate(presets.load("paper-80"), p.topo, list(p.worker_hosts), 1, 0,
                                  rounds=12)
    }  # fmt: skip
    assert all(1 <= e.round < 12 for e in p.events)
    # training: its steps (digits: 1438 examples / 4 ranks / batch 32 = 11 steps an epoch)
    assert run_rounds(RunSpec(workload="train", epochs=2, batch_size=32)) == 22
    assert run_rounds(RunSpec(workload="train", epochs=2, steps=5, batch_size=32)) == 5
    with pytest.raises(SpecError, match="burst"):
        plan(RunSpec(workload="iperf3", burst="paper-90", dilation=1))


def test_paper_events_spare_the_control_links_only_with_control_tcp():
    """The paper's events lose data: with `--control tcp` their loss rules let the transports'
    TCP control links through (the iperf3 probe's control connection is spared the same way);
    without it there is nothing to spare."""
    from testbed.bursts.impairments.iptables import exemption_specs
    from testbed.run.plan import plan
    from testbed.spec import build_spec
    from workloads.transport.config import TransportConfig

    k = TransportConfig().ports_per_peer
    tcp = plan(build_spec(workload="allreduce", rounds=12, burst="paper-90", control="tcp",
                          dilation=1))  # fmt: skip
    assert {tuple(e.params["spare_tcp"]) for e in tcp.events} == {(47000, 47000 + 4 * k - 1)}
    udp = plan(build_spec(workload="allreduce", rounds=12, burst="paper-90", dilation=1))
    assert all("spare_tcp" not in e.params for e in udp.events)
    spared = exemption_specs((47000, 47015))
    assert spared[: len(exemption_specs())] == exemption_specs()
    assert ["-p", "tcp", "--dport", "47000:47015", "-j", "RETURN"] in spared
    assert ["-p", "tcp", "--sport", "47000:47015", "-j", "RETURN"] in spared
