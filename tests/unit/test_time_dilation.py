"""One helper between emulated and played time: `TimeDilation` converts, `LIMITS` is D's one
range, and no module of testbed/ or workloads/ scales a time or a rate by D by hand (read from
the source, so a new hand-written `x * spec.dilation` fails here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from testbed.spec import RunSpec
from workloads.spec import WorkerSpec
from workloads.transport import dilation
from workloads.transport.config import TransportConfig, limits
from workloads.transport.dilation import DURATION, RATE, TimeDilation

ROOT = Path(__file__).resolve().parents[2]
#: Where D is applied; analysis/ reads only its own schema, so it cannot import the helper.
PACKAGES = ("testbed", "workloads")
HELPER = ROOT / "workloads" / "transport" / "dilation.py"
#: A name that holds D: `dilation`, `time_scale`, `spec.dilation`, `self.time_scale`, ...
HOLDS_D = re.compile(r"^(?:.*_)?(?:dilation|time_scale)$")
SCALES = (ast.Mult, ast.Div, ast.FloorDiv)


def _holds_d(node: ast.AST) -> bool:
    """`node` reads a name or attribute that holds D (anywhere inside it: `(dilation - 1)`)."""
    for sub in ast.walk(node):
        name = sub.id if isinstance(sub, ast.Name) else getattr(sub, "attr", None)
        if isinstance(sub, ast.Name | ast.Attribute) and HOLDS_D.match(name):
            return True
    return False


def by_hand(source: str) -> list[int]:
    """The lines of `source` that multiply or divide by something holding D."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp):
            operands = (node.left, node.right)
        elif isinstance(node, ast.AugAssign):
            operands = (node.target, node.value)
        else:
            continue
        if isinstance(node.op, SCALES) and any(map(_holds_d, operands)):
            lines.append(node.lineno)
    return lines


def test_no_module_scales_by_d_by_hand():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != HELPER
        for line in by_hand(path.read_text())
    ]
    assert not found, "scale by D through workloads.transport.dilation.TimeDilation:\n" + (
        "\n".join(found)
    )


@pytest.mark.parametrize(
    "source",
    [
        "t = x * spec.dilation",
        "t = spec.dilation * x",
        "r = mbps / time_scale",
        "s = (dilation - 1) * ms",
        "t //= self.time_scale",
        "g = r * max(info.dilation, 1.0)",
    ],
)
def test_the_check_sees_a_scaling_by_hand(source):
    assert by_hand(source) == [1]


def test_the_check_lets_the_helper_and_other_names_be():
    ok = "t = TimeDilation(spec.dilation).played(x)\nn = len(dilations) * 2\nc = dilation_cache * 2"
    assert by_hand(ok) == []


def test_played_and_emulated_are_inverse_and_anchored():
    d = TimeDilation(4.0)
    assert (d.played(0.5), d.emulated(2.0), d.played_rate(100.0), d.emulated_rate(25.0)) == (
        2.0, 0.5, 25.0, 100.0,
    )  # fmt: skip
    assert d.deadline(1000.0, 0.5) == 1002.0 and d.since(1000.0, 1002.0) == 0.5
    assert d.emulated_clock(1000.0, 1002.0) == 1000.5 and d.stretch(30.0) == 90.0
    assert (d.played_as(DURATION, 1.0), d.played_as(RATE, 1.0), d.played_as(None, 1.0)) == (
        4.0, 0.25, 1.0,
    )  # fmt: skip
    assert TimeDilation().stretch(30.0) == 0.0


@pytest.mark.parametrize("bad", [0.5, 1001.0, float("nan")])
def test_d_outside_its_range_is_refused(bad):
    with pytest.raises(ValueError, match="dilation"):
        TimeDilation(bad)


def test_every_field_holding_d_has_the_one_range():
    def bounds(metadata) -> dict:
        return {a: getattr(m, a) for m in metadata for a in ("ge", "le") if hasattr(m, a)}

    assert bounds(WorkerSpec.model_fields["dilation"].metadata) == dilation.LIMITS
    factor = RunSpec.model_fields["dilation"].annotation.__args__[0]
    assert bounds(factor.__metadata__[0].metadata) == dilation.LIMITS
    assert limits("time_scale") == dilation.LIMITS
    assert TransportConfig(time_scale=4.0).dilation == TimeDilation(4.0)
