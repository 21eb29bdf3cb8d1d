"""Schedules: seeded determinism, role targeting on fattree(4), overlap composition, G-E stats."""

import random

import pytest

from testbed.bursts import presets, schedule
from testbed.bursts.presets import parse_preset
from testbed.bursts.schedule import Event, ScheduleError, generate, timeline
from topologies import fattree, star
from topologies.model import Direction

TOPO = fattree(4)
WORKERS = ["h1", "h5", "h9", "h13"]


def ev(i, start, end, mag, kind="loss", direction=Direction("x", "y"), **params):
    return Event(i, "y-x", direction, kind, mag, params or {"mode": "random"}, start, end)


def test_place_workers_round_robin_across_pods():
    assert schedule.place_workers(TOPO, 4) == WORKERS
    assert schedule.place_workers(TOPO, 5) == [*WORKERS, "h2"]
    assert schedule.place_workers(star(3), 2) == ["h1", "h2"]
    with pytest.raises(ScheduleError, match="workers"):
        schedule.place_workers(star(3), 4)


def test_same_seed_same_events_other_seed_other_events():
    heavy = presets.load("heavy")
    a = generate(heavy, TOPO, WORKERS, 60, seed=3)
    b = generate(heavy, TOPO, WORKERS, 60, seed=3)
    c = generate(heavy, TOPO, WORKERS, 60, seed=4)
    assert a == b
    assert [e.planned_start_s for e in a] != [e.planned_start_s for e in c]


def test_heavy_targets_pod0_agg_uplinks_and_worker0_downlink():
    events = generate(presets.load("heavy"), TOPO, WORKERS, 30, seed=0)
    loss = {str(e.direction) for e in events if e.kind == "loss"}
    assert loss == {
        "r_a0_0->r_c0_0",
        "r_a0_0->r_c0_1",
        "r_a0_1->r_c1_0",
        "r_a0_1->r_c1_1",
        "r_e0_0->h1",
    }
    first = [e for e in events if e.event_id == 0]
    assert len({(e.planned_start_s, e.planned_end_s) for e in first}) == 1


def test_heavy_covers_the_run_and_is_on_a_fifth_of_the_time():
    events = generate(presets.load("heavy"), TOPO, WORKERS, 300, seed=1)
    loss = [e for e in events if e.direction == Direction("r_e0_0", "h1")]
    assert max(e.planned_start_s for e in loss) > 299
    on = sum(e.planned_end_s - e.planned_start_s for e in loss) / 300
    assert 0.17 < on < 0.23  # 0.1 s every 0.1 + Exp(0.4) s


def test_sham_has_heavys_windows_on_idle_hosts():
    heavy = generate(presets.load("heavy"), TOPO, WORKERS, 60, seed=5)
    sham = generate(presets.load("sham"), TOPO, WORKERS, 60, seed=5)
    windows = {(e.event_id, e.planned_start_s, e.planned_end_s) for e in heavy}
    assert windows == {(e.event_id, e.planned_start_s, e.planned_end_s) for e in sham}
    incast = [e for e in sham if e.kind == "incast"]
    assert incast and all(e.params["sham"] for e in incast)
    touched = {h for e in incast for pair in e.params["pairs"] for h in pair}
    assert not touched & set(WORKERS)
    assert all(e.direction.dst not in WORKERS for e in incast)


def test_role_targeting_on_fattree4():
    resolve = schedule.resolve_targets
    t = parse_preset(
        """name = "t"
[[streams]]
kind = "squeeze"
magnitude = 0.1
duration_s = 0.1
arrival = { min_gap_s = 1 }
targets = [
  { role = "tier_uplinks", tier = "edge", pod = 1 },
  { role = "tier_downlinks", tier = "aggregation", pod = 3 },
  { role = "worker_uplink", worker = 2 },
  { role = "link", link = "h16-r_e3_1", direction = "down" },
]"""
    ).streams[0]
    up, down, wup, named = (resolve(TOPO, x, WORKERS) for x in t.targets)
    assert sorted(str(d) for _, d in up) == [
        "r_e1_0->r_a1_0",
        "r_e1_0->r_a1_1",
        "r_e1_1->r_a1_0",
        "r_e1_1->r_a1_1",
    ]
    assert len(down) == 4 and all(d.src.startswith("r_c") and d.dst in ("r_a3_0", "r_a3_1")
                                  for _, d in down)  # fmt: skip
    assert wup == [("h9-r_e2_0", Direction("h9", "r_e2_0"))]
    assert named == [("h16-r_e3_1", Direction("r_e3_1", "h16"))]
    with pytest.raises(ScheduleError, match="worker 7"):
        resolve(TOPO, t.targets[2].model_copy(update={"worker": 7}), WORKERS)


def test_incast_senders_come_from_other_pods_and_fit_their_links():
    pairs = schedule.incast_senders(TOPO, "h9", WORKERS, 4, sham=False)
    senders = [s for s, _ in pairs]
    assert all(TOPO.node(s).pod != 2 for s in senders)
    assert not set(senders) & set(WORKERS)
    heavy = presets.load("heavy").streams[1]
    too_few = heavy.model_copy(update={"senders": 2})
    p = presets.Preset(name="x", streams=(too_few,))
    with pytest.raises(ScheduleError, match="senders: 2 senders x 150 Mbit/s"):
        generate(p, TOPO, WORKERS, 10, seed=0)


def test_probe_runs_without_workers_use_the_default_placement():
    a = generate(presets.load("heavy"), TOPO, [], 10, seed=0)
    assert a == generate(presets.load("heavy"), TOPO, WORKERS, 10, seed=0)


def test_overlap_loss_takes_the_max_and_reverts_only_when_none_remains():
    changes = timeline([ev(0, 1.0, 3.0, 0.2), ev(1, 2.0, 4.0, 0.5), ev(2, 2.5, 2.8, 0.1)])
    got = [(c.t_s, c.value, c.starts, c.ends) for c in changes]
    assert got == [
        (1.0, 0.2, (0,), ()),
        (2.0, 0.5, (1,), ()),
        (2.5, 0.5, (2,), ()),
        (2.8, 0.5, (), (2,)),
        (3.0, 0.5, (), (0,)),
        (4.0, None, (), (1,)),
    ]


def test_overlap_squeeze_takes_the_min_and_kinds_compose_separately():
    changes = timeline(
        [
            ev(0, 0.0, 2.0, 0.5, kind="squeeze"),
            ev(1, 1.0, 3.0, 0.1, kind="squeeze"),
            ev(2, 1.5, 2.5, 0.3, kind="loss"),
        ]
    )
    sq = [(c.t_s, c.value) for c in changes if c.kind == "squeeze"]
    assert sq == [(0.0, 0.5), (1.0, 0.1), (2.0, 0.1), (3.0, None)]
    loss = [(c.t_s, c.value) for c in changes if c.kind == "loss"]
    assert loss == [(1.5, 0.3), (2.5, None)]


def test_back_to_back_events_do_not_revert_in_between():
    changes = timeline([ev(0, 0.0, 1.0, 0.5), ev(1, 1.0, 2.0, 0.5)])
    assert [(c.t_s, c.value, c.starts, c.ends) for c in changes] == [
        (0.0, 0.5, (0,), ()),
        (1.0, 0.5, (1,), (0,)),
        (2.0, None, (), (1,)),
    ]


def test_the_winner_supplies_the_mode():
    changes = timeline([ev(0, 0.0, 2.0, 0.2), ev(1, 1.0, 3.0, 0.25, mode="nth")])
    assert [c.event.params["mode"] for c in changes[:2]] == ["random", "nth"]


def test_gilbert_elliott_matches_the_stationary_distribution():
    g, b, lg, lb = 0.05, 0.2, 0.01, 0.6
    steps = schedule.gilbert_elliott_steps(random.Random(7), 0.0, 2000.0, g, b, lg, lb, 0.01)
    times = [t for t, _ in steps] + [2000.0]
    bad = sum(times[i + 1] - times[i] for i, (_, p) in enumerate(steps) if p == lb)
    pi_bad = g / (g + b)
    assert bad / 2000.0 == pytest.approx(pi_bad, abs=0.02)
    # mean sojourn in bad = step / b
    runs = [times[i + 1] - times[i] for i, (_, p) in enumerate(steps) if p == lb]
    assert sum(runs) / len(runs) == pytest.approx(0.01 / b, rel=0.1)
    mean_loss = sum((times[i + 1] - times[i]) * p for i, (_, p) in enumerate(steps)) / 2000.0
    assert mean_loss == pytest.approx(lg * (1 - pi_bad) + lb * pi_bad, abs=0.015)


def test_gilbert_events_share_one_chain_per_burst_and_play_as_changes():
    p = parse_preset(
        """name = "ge"
[[streams]]
kind = "loss"
mode = "gilbert"
magnitude = 0.5
duration_s = 1.0
arrival = { min_gap_s = 2 }
gilbert = { p_good_to_bad = 0.3, p_bad_to_good = 0.3, step_s = 0.05 }
targets = [{ role = "tier_uplinks", tier = "aggregation", pod = 0 }]"""
    )
    events = generate(p, TOPO, WORKERS, 10, seed=2)
    first = [e for e in events if e.event_id == 0]
    assert len(first) == 4 and len({str(e.params["steps"]) for e in first}) == 1
    one = [c for c in timeline(events) if c.direction == first[0].direction]
    values = {c.value for c in one}
    assert values <= {0.0, 0.5, None} and 0.5 in values and len(one) > 5


def test_link_direction_is_written_and_parsed_as_x_arrow_y():
    d = Direction("r_e0_0", "h1")
    assert str(d) == "r_e0_0->h1" and Direction.parse("r_e0_0->h1") == d
    assert TOPO.link("h1", "r_e0_0").down == d and TOPO.link("h1", "r_e0_0").up == Direction(
        "h1", "r_e0_0"
    )
    for bad in ("r_e0_0", "->h1", "r_e0_0->", "a->b->c"):
        with pytest.raises(ValueError, match="node->peer"):
            Direction.parse(bad)
    names = [str(lk.up) for lk in TOPO.links] + [str(lk.down) for lk in TOPO.links]
    assert [str(x) for x in sorted(map(Direction.parse, names))] == sorted(names)


def test_events_write_their_direction_as_text():
    e = generate(presets.load("heavy"), TOPO, WORKERS, 5, seed=0)[0]
    assert e.to_dict()["direction"] == str(e.direction) and "->" in e.to_dict()["direction"]


@pytest.mark.parametrize("name", ["microburst", "microburst-incast"])
def test_microbursts_are_events_shorter_and_rarer_than_rounds(name):
    # a 1 MiB all-reduce round here is ~0.15-0.25 s (bench): each event must fit inside one
    # and come once per several rounds, on more than one worker's path
    events = generate(presets.load(name), TOPO, WORKERS, 600, seed=2)
    starts = sorted({e.planned_start_s for e in events})
    assert all(e.planned_end_s - e.planned_start_s < 0.15 for e in events)
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert min(gaps) >= 1.5 and 2.0 < sum(gaps) / len(gaps) < 3.0
    hit = {e.direction.dst for e in events}
    assert {WORKERS[0], WORKERS[2]} <= hit
