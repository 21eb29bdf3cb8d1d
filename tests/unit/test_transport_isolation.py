"""The transport stands alone: under torchrun it is imported without the testbed, so loading
every module of workloads/transport/ must pull in nothing but the standard library, numpy and
torch (and torch's own dependencies) — no pandas, pydantic, analysis or testbed."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import importlib, json, pkgutil, sys
import workloads.transport as t
for m in pkgutil.iter_modules(t.__path__):
    importlib.import_module("workloads.transport." + m.name)
print(json.dumps(sorted(sys.modules)))
"""
FORBIDDEN = {"pandas", "pydantic", "pyarrow", "analysis", "testbed", "topologies", "typer", "rich"}


def test_importing_the_transport_loads_nothing_from_outside_it():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(out.stdout)
    assert "workloads.transport.engine" in loaded and "workloads.transport.hooks" in loaded
    roots = {m.split(".")[0] for m in loaded}
    assert not roots & FORBIDDEN, sorted(roots & FORBIDDEN)
    ours = {m for m in loaded if m.startswith("workloads.")}
    assert all(m.startswith("workloads.transport") for m in ours), sorted(ours)


def test_the_worker_never_imports_the_orchestrator():
    """Imports flow testbed -> workloads, never back: a rank under torchrun has no testbed."""
    probe = "import json, sys, workloads.train; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    roots = {m.split(".")[0] for m in json.loads(out.stdout)}
    assert "testbed" not in roots and "topologies" not in roots
