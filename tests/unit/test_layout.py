"""testbed/ is built in wings whose imports run one way: a module may import its own wing or a
lower one, never a higher one. Read from the source (every import, also those inside
functions), so a lazy import cannot hide an upward edge."""

from __future__ import annotations

import ast
from pathlib import Path

TESTBED = Path(__file__).resolve().parents[2] / "testbed"

#: The wings, lowest first. `spec` is a wing of one module: it reads the impairment registry
#: (bursts) and every wing above reads it.
WINGS = ("base", "network", "bursts", "spec", "run", "sweeps", "cli")


def _module(path: Path) -> str:
    parts = path.relative_to(TESTBED.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The testbed modules (or packages) `path` imports, absolute."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from testbed import spec`
    return {m for m in found if m.startswith("testbed.")}


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in WINGS else None


def test_every_testbed_module_sits_in_a_wing():
    loose = [
        _module(p)
        for p in TESTBED.rglob("*.py")
        if _module(p) != "testbed" and _wing(_module(p)) is None
    ]
    assert not loose, f"modules outside the wings {WINGS}: {loose}"


def test_no_wing_imports_a_higher_one():
    upward = []
    for path in sorted(TESTBED.rglob("*.py")):
        module = _module(path)
        wing = _wing(module)
        if wing is None:
            continue
        for target in _imports(path):
            other = _wing(target)
            if other is not None and WINGS.index(other) > WINGS.index(wing):
                upward.append(f"{module} ({wing}) imports {target} ({other})")
    assert not upward, (
        "imports against the wing order " + " < ".join(WINGS) + ":\n" + "\n".join(upward)
    )


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The parser resolves relative and lazy imports (else the test above passes vacuously)."""
    fake = tmp_path / "testbed" / "base" / "probe.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from ..run import experiment\n")
    monkeypatch.setitem(globals(), "TESTBED", tmp_path / "testbed")
    assert "testbed.run.experiment" in _imports(fake)
