"""Every transport declares its traits once (traits.py, completion.py); run.json records them."""

from __future__ import annotations

import pytest

from workloads.transport.completion import (
    POLICIES,
    CompletionPolicy,
    StageProgress,
    Verdict,
    register,
    transport_names,
    transport_traits,
)
from workloads.transport.traits import Traits


def test_declared_traits_match_the_contract():
    want = {
        "dblp": ("bounded-loss", True, True, {"paper": "system", "design": "system"}),
        "mlt": ("bounded-loss", True, False, {"paper": "baseline"}),
        "optireduce": ("bounded-time", False, False, {"design": "baseline"}),
        "reliable": ("exact", False, False, {}),
        "tcp": ("exact", False, False, {"design": "baseline"}),
    }
    for name, (completion, uses_eps, phased, roles) in want.items():
        t = transport_traits(name)
        assert t.as_dict() == {
            "completion": completion,
            "uses_epsilon": uses_eps,
            "phase_aware": phased,
            "roles": roles,
        }, name


def test_every_transport_name_has_traits():
    for name in transport_names():
        assert isinstance(transport_traits(name), Traits)
    with pytest.raises(ValueError, match="unknown transport 'nope'"):
        transport_traits("nope")


@pytest.mark.parametrize(
    "kw",
    [
        {"completion": "fast"},
        {"completion": "exact", "roles": {"paper": "hero"}},
        {"completion": "exact", "roles": {"benchmark": "system"}},
        {"completion": "exact", "phase_aware": True},
    ],
)
def test_bad_traits_are_rejected(kw):
    with pytest.raises(ValueError):
        Traits(**kw)


def test_a_policy_must_declare_its_own_traits():
    class Anonymous(CompletionPolicy):
        name = "anonymous-traits-test"

        def verdict(self, p: StageProgress, now: float) -> Verdict:
            return Verdict(done=True)

    with pytest.raises(TypeError, match="traits"):
        register(Anonymous)
    assert "anonymous-traits-test" not in POLICIES
