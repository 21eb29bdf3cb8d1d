"""A rank's side of round-aligned loss events: it tells the testbed's burst player when each
round begins and ends (the protocol: testbed/bursts/rounds.py).

The testbed hands the player's socket path in `DBLP_ROUND_SOCKET` only when the run's preset
hits rounds; without it (a calm run, torchrun by hand) there is no observer and no cost. The
transport calls `begin(r)` before round r's timed part and `end(r)` after it (the observer
seam of TransposeAllReduce and the tcp hook), so the handshake never counts in a round's
latency. A calm round costs one datagram each way. A hit round begins as a barrier: its begin
waits until every rank has begun it and its loss is on, so no rank still between rounds (in a
Gloo broadcast) meets the loss. Its end is not one: a rank held there could not serve the
repairs its slower peers still need from it.

In training that seam is inside the step, after the forward pass: a begin before the forward
put DDP's own collectives (the bucket rebuild's Gloo broadcast at step 1) under a hit round's
loss, and three ranks reached the round 7-37 s late (`dose-60`). The time a rank waits for its
ack is kept in `waited_s`: the worker counts it as communication, since without the barrier
that wait would sit inside the all-reduce.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from pathlib import Path

__all__ = ["ACK_TIMEOUT_S", "SOCKET_ENV", "RoundSignal", "observe_rounds"]

#: Set by the testbed (testbed/bursts/rounds.py holds the same name).
SOCKET_ENV = "DBLP_ROUND_SOCKET"
#: The longest a rank waits for the player's ack. A hit round's ack waits for the slowest rank
#: to finish the round before, which under a loss event may take many seconds; past this the
#: rank goes on without it (and says so), so a dead player cannot hang a run.
ACK_TIMEOUT_S = 120.0


class RoundSignal:
    """begin(r) / end(r) over a Unix datagram socket bound next to the player's."""

    def __init__(self, player: str | Path, rank: int, timeout_s: float = ACK_TIMEOUT_S) -> None:
        self.player, self.rank, self.timeout_s = str(player), rank, timeout_s
        # bound to a path (not an abstract name): the player lives in another network namespace
        self.path = Path(player).parent / f"rank{rank}-{os.getpid()}.sock"
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.settimeout(timeout_s)
        self._begun: int | None = None
        self._ended: int | None = None
        self.timeouts = 0
        self.waited_s = 0.0  # summed over every begin's wait for its ack

    @classmethod
    def from_env(cls, rank: int) -> RoundSignal | None:
        """The signal the testbed asked for, or None."""
        path = os.environ.get(SOCKET_ENV)
        return cls(path, rank) if path else None

    def begin(self, r: int) -> None:
        """Announce round r and wait for the ack; again for the same round (a later bucket of
        one training step) is a no-op."""
        if self._begun == r:
            return
        self._begun = r
        t0 = time.monotonic()
        self.sock.sendto(f"begin {r} {self.rank}".encode(), self.player)
        self._await({f"ack {r}", f"ack {r} hit"}, f"no ack for round {r}")
        self.waited_s += time.monotonic() - t0

    def end(self, r: int) -> None:
        """Round r is over on this rank (once per round)."""
        if self._ended == r:
            return
        self._ended = r
        self.sock.sendto(f"end {r} {self.rank}".encode(), self.player)

    def _await(self, replies: set[str], what: str) -> str | None:
        """The first of `replies` the player sends (others are stale: ignored); None, said on
        stderr, after `timeout_s`: a dead player must not hang the run."""
        while True:
            try:
                data = self.sock.recv(64).decode(errors="replace")
            except TimeoutError:
                self.timeouts += 1
                print(f"rank {self.rank}: {what} in {self.timeout_s:g} s; going on",
                      file=sys.stderr, flush=True)  # fmt: skip
                return None
            if data in replies:
                return data

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def observe_rounds(state, rank: int) -> RoundSignal | None:
    """Wire the testbed's round signal (if it asked for one) to a hook state: the transport
    then signals every step's rounds. The caller closes what it gets."""
    signal = RoundSignal.from_env(rank)
    if signal is not None:
        state.observe(signal)
    return signal
