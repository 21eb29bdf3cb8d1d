"""The newcomer's path, as far as it can be checked without root or an emulation.

A root-only Debian 12 image has no sudo, so no command in the README, the Makefile or the docs
may use it; the Makefile's messages say what to do as root and how to reach the CLI; the
install recipe adds the CPU torch index only when it answers; every `testbed ...` command the
docs show names a subcommand and options that exist; the console script is declared and
installed; relative links in the docs point at files that exist.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKEFILE = REPO / "Makefile"
STAMP = ".venv/.installed"
TESTBED = Path(sys.executable).parent / "testbed"
#: Documents whose commands a newcomer types (docs/results/README.md, which records how a
#: committed report was made, is only checked for sudo).
DOCS = [
    REPO / "README.md",
    REPO / "docs" / "design.md",
    *sorted((REPO / "docs" / "labs").glob("*.md")),
]
GROUPS = {"topo", "bursts"}  # sub-apps: their command is the second word

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
SUDO = re.compile(r"\bsudo\b")


def _code_lines(text: str) -> list[str]:
    """Every line of every fenced block, and every inline code span."""
    lines = [ln for block in FENCE.findall(text) for ln in block.splitlines()]
    return lines + INLINE.findall(FENCE.sub("", text))


def _testbed_commands(text: str) -> list[list[str]]:
    """`testbed ...` commands (fenced lines and inline spans), as words up to a comment or a
    shell operator."""
    out = []
    for raw in _code_lines(text):
        line = raw.strip()
        if not line.startswith("testbed "):
            continue
        words = []
        for w in line.split()[1:]:
            if w.startswith("#") or w in ("|", "&&", ">", ";", "&"):
                break
            words.append(w)
        out.append(words)
    return out


def _make_install_dry_run(**variables: str) -> str:
    """The install recipe as `make -n` prints it (nothing runs except the index probe)."""
    args = ["make", "-n", "-B", "--no-print-directory", "-C", str(REPO), STAMP]
    args += [f"PYTHON={sys.executable}", *(f"{k}={v}" for k, v in variables.items())]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


#: A torch pin no local wheel satisfies, so the index logic is exercised on any machine.
NO_LOCAL_WHEEL = "torch==0.0.1"


def _torch_line(recipe: str) -> str:
    (line,) = [ln for ln in recipe.splitlines() if "pip install" in ln and "torch==" in ln]
    return line


# -- no sudo -------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", [*DOCS, REPO / "docs" / "results" / "README.md"],
                         ids=lambda p: str(p.relative_to(REPO)))  # fmt: skip
def test_no_sudo_in_doc_commands(doc: Path):
    bad = [ln for ln in _code_lines(doc.read_text()) if SUDO.search(ln)]
    assert not bad, f"{doc.name}: commands must be written as root runs them: {bad}"


def test_no_sudo_in_makefile_commands_or_messages():
    lines = [ln for ln in MAKEFILE.read_text().splitlines() if not ln.lstrip().startswith("#")]
    assert not [ln for ln in lines if SUDO.search(ln)]


def test_readme_two_commands_are_plain_make():
    first = FENCE.findall((REPO / "README.md").read_text())[0]
    assert [ln.split("#")[0].strip() for ln in first.splitlines() if not ln.startswith(" ")] == [
        "make demo",
        "make test",
    ]


# -- the Makefile's messages -----------------------------------------------------------------


def test_root_check_asks_for_root():
    (line,) = [ln for ln in MAKEFILE.read_text().splitlines() if "id -u" in ln]
    message = re.search(r'echo "([^"]+)"', line).group(1)
    assert "needs root" in message and "as root" in message


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_install_ends_by_saying_how_to_reach_the_cli():
    last = _make_install_dry_run(TORCH_INDEX="").strip().splitlines()[-1]
    assert ".venv/bin/testbed" in last and ". .venv/bin/activate" in last


# -- where torch comes from ------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_torch_index_off_when_empty():
    recipe = _make_install_dry_run(TORCH_INDEX="")
    assert "--extra-index-url" not in _torch_line(recipe)
    assert "did not answer" not in recipe


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_unreachable_torch_index_is_skipped_with_a_message():
    with socket.socket() as s:  # a port nobody listens on: connection refused at once
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/whl/cpu"
    recipe = _make_install_dry_run(TORCH_INDEX=url, TORCH=NO_LOCAL_WHEEL)
    assert "--extra-index-url" not in _torch_line(recipe)
    assert f"torch: {url} did not answer" in recipe


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_reachable_torch_index_is_an_extra_index(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "index.html").write_text("<html></html>")
    handler = functools.partial(QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        recipe = _make_install_dry_run(TORCH_INDEX=url, TORCH=NO_LOCAL_WHEEL)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert f"--extra-index-url {url} torch==" in _torch_line(recipe)
    assert "did not answer" not in recipe


def _local_torch_wheel(pin: str) -> bool:
    """Does pip's own configuration (e.g. PIP_FIND_LINKS) hold a wheel of `pin`?"""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-index",
                "-d",
                d,
                pin,
            ],
            capture_output=True,
            timeout=120,
        )
    return r.returncode == 0


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_a_local_torch_wheel_means_no_index_is_asked():
    pin = "torch==2.13.0"
    if not _local_torch_wheel(pin):
        pytest.skip(f"no local wheel of {pin} in pip's configuration on this machine")
    with socket.socket() as s:  # an index that would refuse, were it asked
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/whl/cpu"
    recipe = _make_install_dry_run(TORCH_INDEX=url, TORCH=pin)
    assert "--extra-index-url" not in _torch_line(recipe)
    assert "from a local wheel" in recipe and "did not answer" not in recipe


def test_default_torch_index_is_pytorchs_cpu_index():
    (line,) = [ln for ln in MAKEFILE.read_text().splitlines() if ln.startswith("TORCH_INDEX ?=")]
    assert line.split("?=")[1].strip().endswith("/whl/cpu")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


# -- the CLI the docs show -------------------------------------------------------------------


def test_console_script_declared_and_installed():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"testbed": "testbed.cli:app"}
    (ep,) = metadata.entry_points(group="console_scripts", name="testbed")
    assert ep.value == scripts["testbed"]
    assert TESTBED.is_file() and os.access(TESTBED, os.X_OK)


def _documented_commands() -> dict[tuple[str, ...], set[str]]:
    """Subcommand path -> the options the docs pass to it."""
    found: dict[tuple[str, ...], set[str]] = {}
    for doc in DOCS:
        for words in _testbed_commands(doc.read_text()):
            n = 2 if words and words[0] in GROUPS else 1
            sub = tuple(words[:n])
            if not all(w.islower() for w in sub):  # a placeholder: `testbed COMMAND --help`
                continue
            opts = {w.split("=")[0] for w in words[n:] if w.startswith("--")}
            found.setdefault(sub, set()).update(opts)
    return found


def test_docs_show_testbed_commands():
    subs = _documented_commands()
    assert ("run",) in subs and ("report",) in subs and ("sweep",) in subs


@pytest.mark.parametrize(
    ("sub", "opts"),
    sorted(_documented_commands().items()),
    ids=lambda x: " ".join(x) if isinstance(x, tuple) else "",
)
def test_documented_testbed_command_exists(sub: tuple[str, ...], opts: set[str]):
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1", TERM="dumb")
    r = subprocess.run(
        [str(TESTBED), *sub, "--help"], capture_output=True, text=True, timeout=120, env=env
    )
    assert r.returncode == 0, f"testbed {' '.join(sub)} --help: {r.stderr or r.stdout}"
    missing = sorted(o for o in opts if not re.search(re.escape(o) + r"(?![\w-])", r.stdout))
    assert not missing, f"testbed {' '.join(sub)} has no {missing}"


# -- links -----------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(doc: Path):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{doc.name}: broken links {broken}"


def test_readme_points_at_the_design_in_the_repository():
    readme = (REPO / "README.md").read_text()
    assert "docs/design.md" in readme and (REPO / "docs" / "design.md").is_file()
    assert "shared project folder" not in readme
