"""What a process runs on, for run.json: package versions. Here, not in the testbed, because
a rank under torchrun records it too and the workers never import the orchestrator."""

from __future__ import annotations

import platform
from importlib import metadata


def versions() -> dict[str, str]:
    """Python's and the run's packages' versions on this machine (run.json `versions`)."""
    out = {"python": platform.python_version()}
    for pkg in ("dblp-testbed", "torch", "mininet", "numpy", "pandas", "pyroute2"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out
