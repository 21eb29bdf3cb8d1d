"""What a transport is, declared once on the transport side: how a round ends, whether its ε
means anything, whether the phase controller drives it, and which comparison it takes part in.

run.json records a run's traits (`transport_traits`), and analysis reads them from there, so
no reader lists transport names: a new policy says what it is here and reaches every report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Completion = Literal["exact", "bounded-loss", "bounded-time"]
COMPLETIONS = ("exact", "bounded-loss", "bounded-time")
#: the paper's comparison (dblp against a fixed-tolerance mlt) and the design card's (dblp
#: against optireduce and tcp)
COMPARISONS = ("paper", "design")
ROLES = ("system", "baseline")


@dataclass(frozen=True)
class Traits:
    """One transport's traits. `roles` maps a comparison to the transport's role in it; a
    comparison it takes no part in is absent (reliable, the exact control, has none)."""

    completion: Completion
    uses_epsilon: bool = False
    phase_aware: bool = False
    roles: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.completion not in COMPLETIONS:
            raise ValueError(f"completion must be {'|'.join(COMPLETIONS)}, got {self.completion!r}")
        if self.phase_aware and not self.uses_epsilon:
            raise ValueError("a phase-aware transport must use ε (the phase controller sets it)")
        for comparison, role in self.roles.items():
            if comparison not in COMPARISONS or role not in ROLES:
                raise ValueError(
                    f"roles: {comparison!r}: {role!r} is not one of {COMPARISONS} -> {ROLES}"
                )

    def as_dict(self) -> dict[str, Any]:
        """The plain dict run.json records."""
        return {
            "completion": self.completion,
            "uses_epsilon": self.uses_epsilon,
            "phase_aware": self.phase_aware,
            "roles": dict(self.roles),
        }


#: DDP's own all-reduce over Gloo: not a completion policy, declared beside the registry.
TCP_TRAITS = Traits("exact", roles={"design": "baseline"})
