"""Running kernel-configuring commands: bounded in time, and loud when the kernel says no.

`ip -batch -` and `tc -batch -` stop at the first failing line and print `Command failed -:N`;
`run_batch` maps N back to the command so the error names it, with the kernel's message.
`run_each` does the same for a tool without a batch mode (ethtool): one shell runs the lines.
With `-j`, `ip`/`tc` print one JSON document per batch line (`json_documents` splits them).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

_FAILED_LINE = re.compile(r"Command failed -:(\d+)")


class KernelError(RuntimeError):
    """A kernel operation failed: `.cmd` is what ran, `.stderr` what the kernel said."""

    def __init__(self, cmd: Sequence[str] | str, returncode: int, stderr: str) -> None:
        self.cmd = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"`{self.cmd}` failed (exit {returncode}): {self.stderr}")


def run(argv: Sequence[str], timeout: float = 10.0, input_text: str | None = None) -> str:
    """Run argv, return stdout; raise KernelError on a non-zero exit or a timeout."""
    try:
        p = subprocess.run(
            list(argv), input=input_text, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise KernelError(argv, -1, f"timed out after {timeout:g} s") from None
    except FileNotFoundError as e:
        raise KernelError(argv, -1, f"not found: {e.filename}") from None
    if p.returncode != 0:
        raise KernelError(argv, p.returncode, p.stderr or p.stdout)
    return p.stdout


def json_documents(text: str) -> list[Any]:
    """The JSON documents printed one after another (`ip -j -batch`: one per command)."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return docs
        try:
            doc, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON at char {e.pos}: {text[e.pos : e.pos + 120]!r}") from None
        docs.append(doc)


def batch_text(commands: Sequence[Sequence[str]], tool: str) -> str:
    """`tc`/`ip` argv lists as the lines of a `-batch -` script (the leading tool dropped)."""
    lines = []
    for argv in commands:
        if not argv or argv[0] != tool:
            raise ValueError(f"not a {tool} command: {argv!r}")
        lines.append(" ".join(argv[1:]))
    return "\n".join(lines) + "\n"


def _naming_the_failed_line(
    commands: Sequence[Sequence[str]], prefix: Sequence[str], call: Callable[[], str]
) -> str:
    """`call()`, with a `Command failed -:N` error re-raised as the N-th command's."""
    try:
        return call()
    except KernelError as e:
        m = _FAILED_LINE.search(e.stderr)
        if m and 1 <= int(m.group(1)) <= len(commands):
            failed = [*prefix, *commands[int(m.group(1)) - 1]]
            raise KernelError(failed, e.returncode, e.stderr) from None
        raise


def run_batch(
    commands: Sequence[Sequence[str]],
    tool: str,
    prefix: Sequence[str] = (),
    timeout: float = 10.0,
    options: Sequence[str] = (),
) -> str:
    """Run many `ip`/`tc` commands through one `<prefix> tool [options] -batch -` process.

    Returns what they printed (with `options=["-j"]`, one JSON document per command)."""
    if not commands:
        return ""
    argv = [*prefix, tool, *options, "-batch", "-"]
    text = batch_text(commands, tool)
    return _naming_the_failed_line(
        commands, prefix, lambda: run(argv, timeout=timeout, input_text=text)
    )


def run_each(
    commands: Sequence[Sequence[str]], prefix: Sequence[str] = (), timeout: float = 10.0
) -> None:
    """Run commands of a tool with no batch mode in order, through one `<prefix> sh` process.

    The first failure stops the rest; the error names that command and carries its stderr."""
    if not commands:
        return
    script = "\n".join(
        f"{shlex.join(argv)} || {{ echo 'Command failed -:{i}' >&2; exit 1; }}"
        for i, argv in enumerate(commands, 1)
    )
    _naming_the_failed_line(commands, prefix, lambda: run([*prefix, "sh", "-c", script], timeout))
