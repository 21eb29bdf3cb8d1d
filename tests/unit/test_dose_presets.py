"""The dose presets (issue 19 (d)): a round-aligned stream that hits a fraction of the rounds,
exactly round(f x eligible rounds) of them, seeded; what `[rounds]` refuses; the listing."""

import json
import random

import pytest
from typer.testing import CliRunner

from testbed.bursts import presets
from testbed.bursts.presets import PresetError, RoundPlan, parse_preset
from testbed.bursts.rounds import RoundGate
from testbed.bursts.schedule import ScheduleError, generate, hit_rounds
from topologies import fattree

TOPO = fattree(4)
WORKERS = ["h1", "h5", "h9", "h13"]
DOSES = {"dose-06": 0.06, "dose-30": 0.30, "dose-60": 0.60}

#: (fraction, rounds in the run) -> rounds hit: round(f x (rounds - 1)), halves up, by hand
EXPECTED = {
    (0.06, 10): 1,  # 0.54
    (0.06, 26): 2,  # 1.5, up
    (0.06, 101): 6,
    (0.06, 1001): 60,
    (0.30, 6): 2,  # 1.5, up (the binary 0.3 x 5 is not trusted to round up)
    (0.30, 12): 3,  # 3.3
    (0.30, 301): 90,
    (0.60, 2): 1,  # 0.6
    (0.60, 11): 6,
    (0.60, 300): 179,  # 179.4
}


@pytest.mark.parametrize(("fraction", "total"), sorted(EXPECTED))
def test_a_fraction_hits_exactly_its_share_of_the_eligible_rounds(fraction, total):
    plan = RoundPlan(fraction=fraction)
    for seed in range(10):
        hits = hit_rounds(plan, random.Random(f"{seed}/0"), total)
        assert len(hits) == EXPECTED[fraction, total]
        assert hits == sorted(set(hits)) and all(1 <= r < total for r in hits)


@pytest.mark.parametrize("name", sorted(DOSES))
def test_dose_presets_hit_their_fraction_of_training_rounds_with_paper_60s_loss(name):
    p = presets.load(name)
    (s,) = p.streams
    assert p.round_aligned and p.role == "burst" and "dose-response" in p.description.lower()
    assert (s.kind, s.magnitude, s.mode, s.spare_control) == ("loss", 0.6, "random", True)
    assert [t.role for t in s.targets] == ["all_worker_downlinks"]
    assert (s.rounds.fraction, s.rounds.count, s.rounds.skip) == (DOSES[name], None, 1)
    for total in (20, 57, 240):
        for seed in range(5):
            events = generate(p, TOPO, WORKERS, 1.0, seed, rounds=total)
            rounds = sorted({e.round for e in events})
            assert len(rounds) == int(DOSES[name] * (total - 1) + 0.5)  # no halves here
            assert len(events) == 4 * len(rounds)  # every worker's downlink, each hit round
            assert 0 not in rounds


def test_dose_rounds_are_seeded_nested_and_may_be_adjacent():
    a = generate(presets.load("dose-30"), TOPO, WORKERS, 1.0, 7, rounds=100)
    assert a == generate(presets.load("dose-30"), TOPO, WORKERS, 1.0, 7, rounds=100)

    def rounds(name, seed):
        return {e.round for e in generate(presets.load(name), TOPO, WORKERS, 1, seed, rounds=100)}

    assert len({frozenset(rounds("dose-30", s)) for s in range(10)}) == 10
    for seed in range(5):  # on one seed a higher dose adds rounds to a lower one's
        assert rounds("dose-06", seed) <= rounds("dose-30", seed) <= rounds("dose-60", seed)
    hit = sorted(rounds("dose-60", 0))
    assert any(b - a == 1 for a, b in zip(hit, hit[1:], strict=False))


def test_a_run_too_short_for_one_hit_is_refused_naming_the_rounds():
    plan = RoundPlan(fraction=0.06)
    with pytest.raises(ScheduleError, match="rounds: .* needs 10 or more"):
        hit_rounds(plan, random.Random(0), 9)  # 8 eligible x 0.06 = 0.48: none
    assert len(hit_rounds(plan, random.Random(0), 10)) == 1


def test_the_gate_switches_adjacent_hit_rounds_one_after_the_other():
    g = RoundGate(world=1, hits=frozenset({1, 2}))
    assert g.begin("a", 0, 0) == [("ack", "a", 0, False)]
    g.end(0, 0)
    assert g.begin("a", 0, 1) == [("on", 1), ("ack", "a", 1, True)]
    assert g.end(0, 1) == [("off", 1)]
    assert g.begin("a", 0, 2) == [("on", 2), ("ack", "a", 2, True)]
    assert g.end(0, 2) == [("off", 2)]


BASE = """
name = "x"
[[streams]]
kind = "loss"
magnitude = 0.6
align = "round"
rounds = { fraction = 0.3 }
targets = [{ role = "all_worker_downlinks" }]
"""


@pytest.mark.parametrize(
    ("rounds", "field"),
    [
        ("{ fraction = 0.3, count = [2, 3] }", "streams.0.rounds: .*fraction: give count or"),
        ("{ fraction = 0.95 }", "streams.0.rounds.fraction"),
        ("{ fraction = 0 }", "streams.0.rounds.fraction"),
        ("{ fraction = -0.1 }", "streams.0.rounds.fraction"),
        ("{ count = [3, 2] }", "streams.0.rounds: .*count"),
    ],
)
def test_rounds_take_count_or_fraction_and_errors_name_the_field(rounds, field):
    with pytest.raises(PresetError, match=field):
        parse_preset(BASE.replace("{ fraction = 0.3 }", rounds), "x.toml")


def test_count_stays_the_default_and_old_hashes_stand():
    plain = parse_preset(BASE.replace("{ fraction = 0.3 }", "{ skip = 1 }"))
    counted = parse_preset(BASE.replace("{ fraction = 0.3 }", "{ count = [2, 3] }"))
    assert plain.streams[0].rounds.count == (2, 3) and plain.hash == counted.hash
    assert parse_preset(BASE).hash != plain.hash
    before = {  # `testbed bursts list` before `fraction` existed
        "heavy": "0791c20e8be63c0b",
        "light": "64ec3901b2ef76a5",
        "microburst": "860e19e177cd826b",
        "microburst-incast": "9502d38fe3082b47",
        "moderate": "c3cb1af35866bb9e",
        "none": "4f53cda18c2baa0c",
        "paper-60": "b5a2994e05b43fa5",
        "paper-70": "280127c7e07ca133",
        "paper-80": "462dadf7c149d863",
        "paper-90": "99df7374efc63080",
        "sham": "9afcfb7dd0876465",
    }
    assert {n: presets.load(n).hash for n in before} == before


def test_the_event_bound_counts_a_fractions_rounds():
    from testbed.run.plan import plan
    from testbed.spec import RunSpec, SpecError

    dose = presets.load("dose-60")
    presets.check_event_bound(dose, 1.0, 1000)
    with pytest.raises(PresetError, match="MAX_EVENTS"):
        presets.check_event_bound(dose, 1.0, 1_000_000)
    with pytest.raises(SpecError, match="MAX_EVENTS"):
        plan(RunSpec(workload="allreduce", rounds=1_000_000, burst="dose-60", dilation=1))


def test_bursts_list_and_show_the_dose_presets():
    from testbed.cli import app

    runner = CliRunner(env={"COLUMNS": "400"})
    listing = runner.invoke(app, ["bursts", "list"])
    assert listing.exit_code == 0, listing.output
    for name, f in DOSES.items():
        assert name in listing.output
        assert f"loss 0.6 for one round, {f:.0%} of the rounds" in listing.output
    shown = runner.invoke(app, ["bursts", "show", "dose-30", "--rounds", "41", "--json"])
    assert shown.exit_code == 0, shown.output
    assert len({e["round"] for e in json.loads(shown.output)["events"]}) == 12
