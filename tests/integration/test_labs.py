"""The teaching labs' commands still work: each lab's ```lab-check block, run as a student would.

A lab handout in docs/labs/ carries a fenced block tagged `lab-check`: a reduced form of its
commands, one per line, each meant to finish in about a minute on a 2-core machine. Lines
starting with `# expect` state what the preceding command must show (see docs/labs/README.md):

    # expect keys: a b c        the command's stdout is JSON holding these keys
    # expect: a > b             a comparison of JSON fields (or numbers): > >= < <= ==
    # expect output: TEXT       TEXT occurs in stdout or stderr (what a terminal shows)
    # expect file: PATH         PATH (a glob, after {out} substitution) names a non-empty file

`{out}` becomes a fresh results root per lab; `testbed` resolves to this venv's entry point.
The handouts drive a live Mininet network, so this is a root test; run it under the shared
lock: `flock /tmp/dblp-net.lock .venv/bin/pytest tests/integration/test_labs.py`.
"""

from __future__ import annotations

import glob
import json
import operator
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = [pytest.mark.require_root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "docs" / "labs"
BIN = Path(sys.executable).parent
#: The handouts promise ~60 s a line once a shape is calibrated. A shape's first run also
#: calibrates, under heavy's control, up to D = 8 (testbed/run/dilation.py): lab 3's first line
#: took 4 minutes here (D = 1, 2 and 4 calibrated, then 8 steps at D = 4), and CI's machine ran
#: 1.5x slower than this one.
LINE_TIMEOUT_S = 600
PREFIXES = ("testbed ", "printf ", "echo ")  # what a handout may ask a student to type
BLOCK = re.compile(r"^```lab-check[ \t]*\n(.*?)^```", re.S | re.M)
COMPARE = re.compile(r"^(\S+)\s*(>=|<=|==|>|<)\s*(\S+)$")
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq}


@dataclass
class Check:
    """One command of a lab-check block and the expectations that follow it."""

    command: str
    expects: list[tuple[str, str]] = field(default_factory=list)


def parse_block(text: str) -> list[Check]:
    """The lab-check block of a handout as commands with their expectations."""
    blocks = BLOCK.findall(text)
    if len(blocks) != 1:
        raise ValueError(f"expected exactly one ```lab-check block, found {len(blocks)}")
    checks: list[Check] = []
    for raw in blocks[0].splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("# expect"):
            kind, _, arg = line[len("# expect") :].partition(":")
            if not checks:
                raise ValueError(f"expectation before any command: {line!r}")
            checks[-1].expects.append((kind.strip() or "compare", arg.strip()))
        elif not line.startswith("#"):
            checks.append(Check(line))
    return checks


def _value(token: str, doc: dict):
    try:
        return float(token)
    except ValueError:
        pass
    if token not in doc:
        raise AssertionError(f"JSON has no key {token!r} (keys: {sorted(doc)})")
    return doc[token]


def _json(stdout: str) -> dict:
    try:
        return json.loads(stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"stdout is not JSON ({e}): {stdout[:400]!r}") from None


def verify(check: Check, stdout: str, stderr: str) -> None:
    """Assert every expectation of one command against its output and the files it wrote."""
    for kind, arg in check.expects:
        if kind == "keys":
            doc = _json(stdout)
            missing = [k for k in arg.split() if k not in doc]
            assert not missing, f"{check.command}: JSON lacks {missing}"
        elif kind == "compare":
            m = COMPARE.match(arg)
            assert m, f"bad comparison {arg!r}"
            doc = _json(stdout)
            left, op, right = _value(m[1], doc), m[2], _value(m[3], doc)
            assert left is not None and right is not None, f"{arg}: {left!r} {op} {right!r}"
            assert OPS[op](left, right), f"{check.command}: expected {arg}, got {left} {op} {right}"
        elif kind == "output":
            shown = stdout + stderr
            assert arg in shown, f"{check.command}: {arg!r} not in its output:\n{shown[-2000:]}"
        elif kind == "file":
            hits = [p for p in glob.glob(arg) if os.path.getsize(p) > 0]
            assert hits, f"{check.command}: no non-empty file matches {arg}"
        else:
            raise AssertionError(f"unknown expectation kind {kind!r}")


def run_line(command: str) -> tuple[subprocess.CompletedProcess, float]:
    env = os.environ | {"PATH": f"{BIN}:{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=LINE_TIMEOUT_S,
    )
    return proc, time.monotonic() - t0


def test_block_parser_reads_commands_and_expectations():
    text = "x\n```lab-check\ntestbed a --out {out}\n# expect keys: k\n# note\n\ntestbed b\n```\n"
    checks = parse_block(text)
    assert [c.command for c in checks] == ["testbed a --out {out}", "testbed b"]
    assert checks[0].expects == [("keys", "k")] and checks[1].expects == []


HANDOUTS = sorted(LABS.glob("0*.md"))


def test_every_handout_has_a_lab_check_block():
    assert len(HANDOUTS) == 3, HANDOUTS
    for path in HANDOUTS:
        checks = parse_block(path.read_text())
        assert checks, f"{path.name}: empty lab-check block"
        assert all(c.command.startswith(PREFIXES) for c in checks), path.name


@pytest.mark.parametrize("handout", HANDOUTS, ids=lambda p: p.stem)
def test_lab_commands_run(handout: Path, tmp_path: Path):
    """Each line exits 0 and shows what the handout says it shows."""
    timings = []
    for check in parse_block(handout.read_text()):
        out = str(tmp_path)
        command = check.command.replace("{out}", out)
        proc, took = run_line(command)
        timings.append(f"{took:6.1f} s  {check.command}")
        assert proc.returncode == 0, (
            f"{handout.name}: `{command}` exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
        )
        expanded = Check(command, [(k, a.replace("{out}", out)) for k, a in check.expects])
        verify(expanded, proc.stdout, proc.stderr)
    print(f"\n{handout.name}:\n" + "\n".join(timings))
