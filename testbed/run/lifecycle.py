"""How a run ends: the exceptions that end it, the (status, reason) they give, and the
SIGINT/SIGTERM state machine over the whole run, so that every exit path leaves a final
run.json with its status and reason."""

from __future__ import annotations

import signal

from testbed.base.signals import Handlers


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM during a run; `signum` says which. A KeyboardInterrupt (like
    `network.Terminated`), so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class RunFailed(RuntimeError):
    """A worker died, hung, or the network could not carry the run."""


def signal_name(exc: BaseException) -> str | None:
    """The signal an exception stands for, or None: `Interrupted` and `network.Terminated`
    carry theirs (`signum`); a bare KeyboardInterrupt is Python's own SIGINT."""
    if not isinstance(exc, KeyboardInterrupt):
        return None
    return signal.Signals(getattr(exc, "signum", signal.SIGINT)).name


def _failure(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, RunFailed) else f"{type(exc).__name__}: {exc}"


def final_status(error: BaseException | None, late: int | None = None) -> tuple[str, str]:
    """(status, reason) of a run, from what ended its execution (`error`, None if it returned)
    and the first signal that came after it, while the results were merged (`late`). Pure.

    - A signal in `error`'s chain (the exceptions raised while handling others): interrupted,
      named after the first signal (the deepest); a failure it interrupted is kept in the reason.
    - A late signal: interrupted as well (the run did not end on its own terms, and a sweep
      must stop); the reason says how the workload itself had ended.
    - Otherwise a failure is failed, and nothing is ok.
    """
    chain: list[BaseException] = []
    while error is not None and len(chain) < 64 and all(error is not e for e in chain):
        chain.append(error)
        error = error.__context__ or error.__cause__
    hit = [i for i, e in enumerate(chain) if signal_name(e)]
    if hit:
        reason = f"received {signal_name(chain[hit[-1]])}"
        before = [e for e in chain[hit[-1] + 1 :] if not signal_name(e)]
        if before:
            reason += f" after a failure: {_failure(before[0])}"
        return "interrupted", reason
    status, reason = ("failed", _failure(chain[0])) if chain else ("ok", "")
    if late is not None:
        ended = f"failed: {reason}" if chain else "finished ok"
        when = "while merging the results"
        return "interrupted", f"received {signal.Signals(late).name} {when} (the run had {ended})"
    return status, reason


# the phases of a run, as `_Signals` sees them
_SETUP, _RUN, _UNWIND = "setup", "run", "unwind"
_CLOSING, _MERGE, _WRITE = "closing", "merge", "write"
_LATE = (_CLOSING, _MERGE, _WRITE)  # after the run's execution ended


class _Signals(Handlers):
    """SIGINT/SIGTERM over the whole of `run_experiment` (main thread only), by phase:

    setup    recorded: the run dir and its first run.json are made whole; `enter(_RUN)` raises
    run      the first signal raises `Interrupted` (the network defers its own while it is built
             or torn down, then raises `network.Terminated` or KeyboardInterrupt)
    unwind   recorded only, while the interrupted run unwinds
    closing  recorded only: from the end of the execution to the final run.json, a signal never
             raises, so run.json always gets a final status; the run ends interrupted (`late`)
    merge    the same, but for a signal beyond the run's first: that one cuts the merge short
    write    recorded only; the final status is fixed (`close`): such a signal is handed on, on
             exit, to the handler outside the run
    A raise leaves the raising phase at once, so a raise can only happen where it is caught.
    """

    def __init__(self) -> None:
        super().__init__()
        self.phase = _SETUP
        self.received: list[tuple[str, int]] = []  # (phase, signum), in arrival order
        self.patience = 1  # late signals the merge absorbs before one cuts it short
        self._accounted = 0  # received[:_accounted] are reflected in the run's status

    def __enter__(self) -> _Signals:
        super().__enter__()
        return self

    def _unhandled(self) -> int | None:
        rest = self.received[self._accounted :]
        return rest[0][1] if rest else None

    def _handle(self, signum: int, _frame: object) -> None:
        self.received.append((self.phase, signum))
        if self.phase == _RUN:
            self.phase = _UNWIND
            raise Interrupted(signum)
        if self.phase == _MERGE and self.patience <= 0:
            self.phase = _CLOSING
            raise Interrupted(signum)
        if self.phase in (_CLOSING, _MERGE):
            self.patience -= 1

    def enter(self, phase: str) -> None:
        self.phase = phase
        if phase == _RUN and self.received:  # a signal during setup: the run ends before it starts
            self.phase = _UNWIND
            raise Interrupted(self.received[0][1])

    def close(self) -> int | None:
        """Fix the signals the final status reflects; return the first late one (or None)."""
        self.phase = _WRITE
        n = len(self.received)
        self._accounted = n
        return next((signum for ph, signum in self.received[:n] if ph in _LATE), None)
