"""Reading a small input file (a config, a rank's meta.json) without trusting what the path is.

A plain `read_text()` follows whatever the path names: `/dev/zero` reads until memory runs out,
a FIFO blocks forever, a symlink in a copied folder leaks the file it points at. Here the path
is opened without blocking (and, when asked, without following a final symlink), and read only
if it is a regular file within the size limit.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class RefusedFile(ValueError):
    """The path is not a small regular file; the message says what it is instead."""


def read_small(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes. Raises RefusedFile for
    anything else (a device, FIFO, socket, a larger file, a symlink when `follow` is False),
    and OSError (FileNotFoundError, IsADirectoryError, ...) as `open` would."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow:
            raise RefusedFile(f"{path} is a symlink (symlinks are not followed)") from e
        raise
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise RefusedFile(f"{path} is not a regular file (a device, FIFO or socket)")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise RefusedFile(f"{path} is larger than {limit:,} bytes")
    return data
