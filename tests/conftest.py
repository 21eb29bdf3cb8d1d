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


@pytest.fixture(autouse=True, scope="session")
def _dilation_cache(tmp_path_factory):
    """`--dilation auto` (the default) caches its calibrations per machine and shape: the suite
    keeps its own cache, shared by its runs (each shape calibrates once), never the user's."""
    from testbed.run.dilation_cache import CACHE_ENV

    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("cache") / "dilation.json")
    yield
    if old is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = old
