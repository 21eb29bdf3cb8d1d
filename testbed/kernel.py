"""Running kernel-configuring commands: bounded in time, and loud when the kernel says no.

`ip -batch -` and `tc -batch -` stop at the first failing line and print `Command failed -:N`;
`run_batch` maps N back to the command so the error names it, with the kernel's message.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

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


def batch_text(commands: Sequence[Sequence[str]], tool: str) -> str:
    """`tc`/`ip` argv lists as the lines of a `-batch -` script (the leading tool dropped)."""
    lines = []
    for argv in commands:
        if not argv or argv[0] != tool:
            raise ValueError(f"not a {tool} command: {argv!r}")
        lines.append(" ".join(argv[1:]))
    return "\n".join(lines) + "\n"


def run_batch(
    commands: Sequence[Sequence[str]],
    tool: str,
    prefix: Sequence[str] = (),
    timeout: float = 10.0,
) -> None:
    """Run many `ip`/`tc` commands through one `<prefix> tool -batch -` process."""
    if not commands:
        return
    argv = [*prefix, tool, "-batch", "-"]
    try:
        run(argv, timeout=timeout, input_text=batch_text(commands, tool))
    except KernelError as e:
        m = _FAILED_LINE.search(e.stderr)
        if m and 1 <= int(m.group(1)) <= len(commands):
            failed = [*prefix, *commands[int(m.group(1)) - 1]]
            raise KernelError(failed, e.returncode, e.stderr) from None
        raise
