"""How a run ends: its status and reason, the real signal's name, and signals during the merge.

No root and no namespaces: the status mapping is pure, and `_Signals` is driven with signals
this process sends itself. test_lifecycle_process.py signals a whole run in a child process.
"""

from __future__ import annotations

import signal
import subprocess

import pytest

from testbed.base.statedir import netns_inode
from testbed.network.live import Terminated, _kill_if_in
from testbed.network.live import _Signals as NetSignals
from testbed.run import lifecycle
from testbed.run.lifecycle import Interrupted, RunFailed, _Signals, final_status, signal_name


def _raised_while_handling(first: BaseException, then: BaseException) -> BaseException:
    """`then` raised inside an except clause for `first` (so its __context__ is `first`)."""
    try:
        try:
            raise first
        except BaseException:
            raise then  # noqa: B904 - the implicit context is the point
    except BaseException as e:
        return e
    raise AssertionError("unreachable")


# --- the status mapping (pure) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "exc, name",
    [
        (Interrupted(signal.SIGTERM), "SIGTERM"),
        (Interrupted(signal.SIGINT), "SIGINT"),
        (Terminated(signal.SIGTERM), "SIGTERM"),
        (Terminated(), "SIGTERM"),
        (Terminated(signal.SIGHUP), "SIGHUP"),
        (KeyboardInterrupt(), "SIGINT"),
        (RunFailed("x"), None),
        (ValueError("x"), None),
    ],
)
def test_signal_name_is_the_real_signal(exc, name):
    assert signal_name(exc) == name


def test_a_run_that_returned_is_ok():
    assert final_status(None) == ("ok", "")


def test_failures_are_failed_with_their_reason():
    assert final_status(RunFailed("worker rank 2 exited with code 1")) == (
        "failed",
        "worker rank 2 exited with code 1",
    )
    assert final_status(ValueError("bad")) == ("failed", "ValueError: bad")


def test_sigterm_through_the_network_is_recorded_as_sigterm_not_sigint():
    # the live network turns SIGTERM into Terminated, a KeyboardInterrupt: it used to be
    # caught as one and recorded as "received SIGINT"
    assert final_status(Terminated(signal.SIGTERM)) == ("interrupted", "received SIGTERM")
    assert final_status(Interrupted(signal.SIGTERM)) == ("interrupted", "received SIGTERM")
    assert final_status(KeyboardInterrupt()) == ("interrupted", "received SIGINT")


def test_the_first_signal_names_the_interruption():
    second = _raised_while_handling(KeyboardInterrupt(), Interrupted(signal.SIGTERM))
    assert final_status(second) == ("interrupted", "received SIGINT")


def test_a_failure_during_the_unwinding_of_a_signal_keeps_it_interrupted():
    cleanup_error = _raised_while_handling(Terminated(), OSError("disk full"))
    assert final_status(cleanup_error) == ("interrupted", "received SIGTERM")


def test_a_signal_during_a_failure_is_interrupted_and_keeps_the_failure():
    e = _raised_while_handling(RunFailed("worker rank 1 exited with code 9"), Terminated())
    assert final_status(e) == (
        "interrupted",
        "received SIGTERM after a failure: worker rank 1 exited with code 9",
    )


def test_a_late_signal_interrupts_and_says_how_the_run_had_ended():
    assert final_status(None, signal.SIGTERM) == (
        "interrupted",
        "received SIGTERM while merging the results (the run had finished ok)",
    )
    assert final_status(RunFailed("no progress"), signal.SIGINT) == (
        "interrupted",
        "received SIGINT while merging the results (the run had failed: no progress)",
    )
    # an interrupted run stays named after what interrupted it
    assert final_status(Terminated(), signal.SIGINT) == ("interrupted", "received SIGTERM")


def test_a_context_cycle_does_not_hang():
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, None
    b.__context__ = a  # Python refuses to build such a cycle itself; be safe anyway
    assert final_status(a)[0] == "failed"


# --- _Signals, driven by signals sent to this process -----------------------------------------


@pytest.fixture
def outer():
    """A SIGTERM handler outside the run that records what it is handed."""
    got: list[int] = []
    old = signal.signal(signal.SIGTERM, lambda n, _f: got.append(n))
    yield got
    signal.signal(signal.SIGTERM, old)


def _deliver(signum: int = signal.SIGTERM) -> None:
    signal.raise_signal(signum)
    for _ in range(3):  # the Python-level handler runs at the next bytecode boundary
        pass


def test_setup_defers_and_the_run_start_raises_it(outer):
    with _Signals() as sig:
        _deliver()
        with pytest.raises(Interrupted) as e:
            sig.enter(lifecycle._RUN)
        assert e.value.signum == signal.SIGTERM
        sig.enter(lifecycle._CLOSING)
        assert sig.close() is None  # not late: it interrupted the run
    assert outer == []


def test_run_raises_once_then_records(outer):
    with _Signals() as sig:
        sig.enter(lifecycle._RUN)
        with pytest.raises(Interrupted):
            _deliver()
        _deliver()  # while unwinding: recorded only
        sig.enter(lifecycle._CLOSING)
        assert sig.close() is None
    assert [s for _ph, s in sig.received] == [signal.SIGTERM, signal.SIGTERM]
    assert outer == []


def test_closing_and_merge_record_then_a_second_signal_cuts_the_merge(outer):
    with _Signals() as sig:
        sig.enter(lifecycle._RUN)
        sig.enter(lifecycle._CLOSING)
        _deliver()  # the first late signal: recorded, absorbed
        sig.enter(lifecycle._MERGE)
        with pytest.raises(Interrupted):
            _deliver()  # beyond the first: cuts the merge short
        assert sig.phase == lifecycle._CLOSING  # and never raises again
        _deliver()
        assert sig.close() == signal.SIGTERM
    assert outer == []


def test_an_interrupted_run_cuts_the_merge_at_the_next_signal(outer):
    with _Signals() as sig:
        sig.patience = 0
        sig.enter(lifecycle._MERGE)
        with pytest.raises(Interrupted):
            _deliver()


def test_a_signal_after_the_status_is_fixed_is_handed_on(outer):
    with _Signals() as sig:
        sig.enter(lifecycle._CLOSING)
        assert sig.close() is None
        _deliver()  # while run.json is written: recorded, not raised
        assert outer == []
    assert outer == [signal.SIGTERM]  # then handed to the handler outside


def test_network_signals_name_sigterm_and_hand_on_what_they_never_raised(outer):
    with pytest.raises(Terminated) as e:
        NetSignals._raise(signal.SIGTERM)
    assert e.value.signum == signal.SIGTERM and str(e.value) == "SIGTERM"
    with pytest.raises(KeyboardInterrupt) as k:
        NetSignals._raise(signal.SIGINT)
    assert type(k.value) is KeyboardInterrupt
    with NetSignals():  # deferring: never raised inside
        _deliver()
        assert outer == []
    assert outer == [signal.SIGTERM]


# --- the pidfd kill of teardown, on a child of ours in our own namespace ----------------------


def test_kill_if_in_kills_only_inside_the_given_namespaces():
    child = subprocess.Popen(["sleep", "30"])
    try:
        ns = netns_inode(child.pid)
        _kill_if_in(child.pid, {ns + 1})  # another namespace: untouched
        assert child.poll() is None
        _kill_if_in(child.pid, {ns})
        assert child.wait(timeout=5) == -signal.SIGKILL
        _kill_if_in(child.pid, {ns})  # gone (a zombie reaped): no error
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=5)
