"""Phase controller rules (pure): warm-up, LR decay, Accordion; ε only moves at checkpoints."""

import pytest

from workloads.transport.phase import Decision, PhaseConfig, PhaseRules, decode, encode

CFG = PhaseConfig(eps_critical=0.01, eps_stable=0.2, checkpoint_every=5, warmup_steps=10, eta=0.5)


def run(rules: PhaseRules, norms: dict[int, float], steps: int) -> dict[int, Decision]:
    """Decisions at every checkpoint in [0, steps), feeding the given accumulated norms."""
    return {s: rules.decide(s, norms.get(s)) for s in range(steps) if rules.is_checkpoint(s)}


def test_warmup_is_critical_then_stable_with_steady_norms():
    d = run(PhaseRules(CFG), {s: 1.0 for s in range(5, 40, 5)}, 40)
    assert [d[s].reason for s in (0, 5)] == ["warmup", "warmup"]
    assert all(d[s].phase == "stable" and d[s].epsilon == 0.2 for s in range(10, 40, 5))
    assert d[0].epsilon == 0.01


def test_lr_decay_makes_one_interval_critical():
    d = run(PhaseRules(CFG, lr_decay_steps=(20,)), {s: 1.0 for s in range(5, 40, 5)}, 40)
    assert d[20].reason == "lr_decay" and d[20].epsilon == 0.01
    assert d[15].phase == "stable" and d[25].phase == "stable"


def test_lr_decay_between_checkpoints_applies_at_the_next_one():
    d = run(PhaseRules(CFG, lr_decay_steps=(22,)), {s: 1.0 for s in range(5, 40, 5)}, 40)
    assert d[20].phase == "stable"
    assert d[25].reason == "lr_decay"
    assert d[30].phase == "stable"


@pytest.mark.parametrize(("new", "fires"), [(1.49, False), (1.5, True), (0.5, True), (0.51, False)])
def test_accordion_threshold_on_relative_change(new, fires):
    norms = {5: 1.0, 10: 1.0, 15: 1.0, 20: new, 25: new}
    d = run(PhaseRules(CFG), norms, 30)
    assert (d[20].reason == "accordion") is fires
    assert d[25].phase == "stable"  # compared with the previous interval, which had `new` too


def test_epsilon_only_changes_at_checkpoints_and_eps_id_counts_changes():
    rules = PhaseRules(CFG, lr_decay_steps=(30,))
    with pytest.raises(ValueError):
        rules.decide(3, 1.0)
    d = run(rules, {s: 1.0 for s in range(5, 50, 5)}, 50)
    ids = [d[s].eps_id for s in sorted(d)]
    eps = [d[s].epsilon for s in sorted(d)]
    changes = sum(a != b for a, b in zip(eps, eps[1:], strict=False))
    assert ids[-1] == changes == 3  # critical -> stable -> critical (decay) -> stable
    assert all(b - a in (0, 1) for a, b in zip(ids, ids[1:], strict=False))


def test_phase_off_pins_epsilon_but_labels_phases():
    off = PhaseConfig(eps_critical=0.0, eps_stable=0.2, checkpoint_every=5, warmup_steps=10,
                      mode="off", pinned_epsilon=0.05)  # fmt: skip
    d = run(PhaseRules(off, lr_decay_steps=(20,)), {s: 1.0 for s in range(5, 40, 5)}, 40)
    assert {x.epsilon for x in d.values()} == {0.05}
    assert {x.eps_id for x in d.values()} == {0}
    assert d[0].phase == "critical" and d[20].phase == "critical" and d[15].phase == "stable"
    assert PhaseConfig(mode="off").off_epsilon == PhaseConfig().eps_stable


def test_invalid_config_is_rejected():
    with pytest.raises(ValueError):
        PhaseConfig(eps_stable=1.0)
    with pytest.raises(ValueError):
        PhaseConfig(checkpoint_every=0)


def test_broadcast_encoding_round_trips():
    for reason, phase in (("warmup", "critical"), ("accordion", "critical"), ("stable", "stable")):
        d = Decision(40, 0.125, 7, phase, reason)
        assert decode(encode(d)) == d
