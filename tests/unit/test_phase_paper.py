"""The DBLP paper's phase schedule (`--phase paper`): pure rules, the controller's switch record,
and the spec that asks for it."""

import pytest
import torch

from workloads.spec import SpecError, WorkerSpec, validate
from workloads.transport import phase as ph
from workloads.transport.phase import PaperRules, PhaseConfig, PhaseRules, rules_for

P_LOW, P_GAP, SPE = 0.008, 0.4, 4
P_HIGH = P_LOW + P_GAP
PAPER = PhaseConfig(mode="paper", p_low=P_LOW, p_gap=P_GAP)


def run(norms: list[float], epochs: int) -> dict[int, ph.Decision]:
    """Decisions at every step of `epochs` epochs; norms[e] is epoch e's accumulated norm."""
    rules = PaperRules(PAPER, SPE)
    out = {}
    for s in range(epochs * SPE):
        if rules.is_checkpoint(s):
            e = s // SPE
            out[s] = rules.decide(s, norms[e - 1] if e else None)
    return out


def test_decides_only_at_epoch_starts():
    rules = PaperRules(PAPER, SPE)
    assert [s for s in range(13) if rules.is_checkpoint(s)] == [0, 4, 8, 12]
    with pytest.raises(ValueError, match="not a checkpoint"):
        rules.decide(3, 1.0)


def test_starts_at_p_low_then_resets_to_p_high_each_epoch_with_steady_norms():
    d = run([1.0, 1.1, 0.9, 1.0], 5)
    assert (d[0].epsilon, d[0].phase, d[0].reason) == (P_LOW, "critical", "start")
    later = [d[s] for s in (4, 8, 12, 16)]
    assert all((x.epsilon, x.phase, x.reason) == (P_HIGH, "stable", "epoch") for x in later)
    assert [x.eps_id for x in d.values()] == [0, 1, 1, 1, 1]  # one switch: P_low -> P_high


@pytest.mark.parametrize(("new", "fires"), [(1.49, False), (1.5, True), (0.5, True), (0.51, False)])
def test_drops_to_p_low_for_the_epoch_after_the_rule_fires(new, fires):
    # epoch 2's norm against epoch 1's decides epoch 3; epoch 3 keeps `new`, so epoch 4 is calm
    d = run([1.0, 1.0, new, new], 5)
    assert d[12].epsilon == (P_LOW if fires else P_HIGH)
    assert (d[12].reason == "accordion") is fires
    assert d[16].epsilon == P_HIGH and d[8].epsilon == P_HIGH


def test_the_first_epoch_has_no_previous_epoch_to_fire_on():
    assert run([100.0, 1.0], 2)[4].epsilon == P_HIGH


def test_eps_id_counts_every_switch():
    d = run([1.0, 1.0, 3.0, 3.0, 0.5, 0.5], 7)
    eps = [x.epsilon for x in d.values()]
    assert eps == [P_LOW, P_HIGH, P_HIGH, P_LOW, P_HIGH, P_LOW, P_HIGH]
    assert [x.eps_id for x in d.values()] == [0, 1, 1, 2, 3, 4, 5]


def test_mode_picks_the_rules_and_the_record_says_which_ran():
    assert isinstance(rules_for(PAPER, (20,), SPE), PaperRules)
    assert type(rules_for(PhaseConfig(), (20,), SPE)) is PhaseRules
    rec = PAPER.record()
    assert (rec["mode"], rec["enabled"], rec["p_low"], rec["p_high"]) == (
        "paper",
        True,
        P_LOW,
        pytest.approx(P_HIGH),
    )
    off = PhaseConfig(mode="off").record()
    assert (off["mode"], off["enabled"], off["p_high"]) == ("off", False, None)


@pytest.mark.parametrize(
    "kw", [{"p_low": 0.01}, {"p_low": 0.6, "p_gap": 0.4}, {"p_low": 0.01, "p_gap": -0.1}]
)
def test_bad_paper_config_is_rejected(kw):
    with pytest.raises(ValueError):
        PhaseConfig(mode="paper", **kw)


def test_the_controller_records_each_switch(monkeypatch):
    """Rank 0 alone, the broadcast short-circuited: `switched` marks the steps where ε moved."""
    monkeypatch.setattr(ph, "broadcast_decision", lambda d, group=None: (d, 0.0))
    p = torch.nn.Parameter(torch.zeros(3))
    ctl = ph.PhaseController(PaperRules(PAPER, 2), rank=0)
    grads = [1.0, 1.0, 1.0, 1.0, 4.0, 4.0, 4.0, 4.0]  # epoch 2's norm is 4x epoch 1's
    seen = []
    for step, g in enumerate(grads):
        d = ctl.update(step)
        seen.append((d.epsilon, ctl.switched))
        p.grad = torch.full((3,), g)
        ctl.after_step([p])
    ctl.update(len(grads))
    assert [c.decision.effective_step for c in ctl.history if c.switched] == [2, 6, 8]
    assert [c.decision.epsilon for c in ctl.history] == [P_LOW, P_HIGH, P_HIGH, P_LOW, P_HIGH]
    assert seen[2] == (P_HIGH, True) and seen[3] == (P_HIGH, False)


BAD_SPECS = [
    ({"p_low": 1}, "p_low"),
    ({"p_gap": -0.1}, "p_gap"),
    ({"p_low": 0.5, "p_gap": 0.5}, "p_gap"),
    ({"phase": "paper", "workload": "allreduce"}, "phase"),
    ({"phase": "paper", "epsilon": 0.3}, "epsilon"),
]


@pytest.mark.parametrize(("data", "field"), BAD_SPECS)
def test_bad_paper_specs_name_the_field(data, field):
    with pytest.raises(SpecError) as e:
        validate(WorkerSpec, data)
    assert e.value.field == field


def test_the_paper_spec_defaults_are_the_papers():
    s = WorkerSpec(phase="paper")
    assert (s.p_low, s.p_gap) == (0.008, 0.4)
