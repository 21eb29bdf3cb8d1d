"""Shared test plumbing: root-only integration tests are skipped, with the reason, without root."""

import os
import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0 and shutil.which("mnexec"):
        return
    why = "needs root" if os.geteuid() != 0 else "needs Mininet's mnexec (apt-get install mininet)"
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if "require_root" in item.keywords:
            item.add_marker(skip)
