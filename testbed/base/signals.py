"""SIGINT/SIGTERM handling that a run (`experiment`) and a live network (`network`) share.

Light on imports on purpose: `experiment` must not pull in Mininet just to handle signals.
"""

from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Handlers:
    """While inside `with`, SIGINT and SIGTERM go to `_handle` (main thread only: Python runs
    handlers there). On exit the previous handlers come back, and a signal that was received
    but never acted on (`_unhandled`) is handed to them rather than dropped."""

    def __init__(self) -> None:
        self._old: dict[int, object] = {}

    def __enter__(self) -> Handlers:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]
        left = self._unhandled() if self._old else None
        if left is not None:
            signal.raise_signal(left)

    def _handle(self, signum: int, _frame: object) -> None:
        raise NotImplementedError

    def _unhandled(self) -> int | None:
        """The first signal received and neither raised nor otherwise accounted for."""
        return None
