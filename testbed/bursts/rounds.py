"""Round-aligned events: the ranks say when each round begins and ends, the player switches
the loss on for exactly the hit rounds.

The paper's loss lasts as long as the hit iteration does, so every repair pass of that round
meets the same rate; a time window cannot do this (a short one lets a slow transport repair in
the clear, a long one hits a fast one's next rounds). So the ranks signal, over a Unix datagram
socket in the run's state dir (a path, unlike an abstract name, is reachable from every network
namespace; the player runs in the root one). The protocol, one ASCII datagram each:

    rank -> player   "begin R RANK"   before round R's timed part, then waits for the ack
    player -> rank   "ack R"          at once for a calm round
    player -> rank   "ack R hit"      for a hit round, once every rank began R and its loss is on
    rank -> player   "end R RANK"     after round R; the loss goes off when every rank has ended R

`RoundGate` decides (pure); `RoundPlayer` owns the socket and the thread. The loss goes on only
once every rank has begun the hit round (so every rank has ended the round before, and none is
still in a collective of its own between rounds, such as the phase controller's Gloo
broadcast), it goes off once every rank has ended it, and no rank begins a later round while it
is on. Without that begin barrier two ranks that began a hit round early switched the loss on
while the other two were still in the step's Gloo broadcast: 90% loss on that TCP connection,
kept on because those ranks never reached the round, stalled it until Gloo's 240 s timeout
(mlt, `paper-90`). The end is no barrier: a rank held at the end of a hit round until the loss
was off could not serve the repairs its slower peers still needed from it, and both waited
(mlt, `dose-60`: two ranks stuck in the round until the other two gave up after 120 s). A rank
that leaves a hit round early may meet its loss in its next Gloo message, which TCP repairs once
the last rank ends the round. A calm round costs one datagram each way.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from testbed.bursts.impairments.applier import make_realtime

__all__ = ["SOCKET_ENV", "SOCKET_NAME", "RoundGate", "RoundPlayer"]

#: The environment variable that hands every rank the socket's path (workloads/round_signal.py
#: reads it; the name is duplicated there, since workers import nothing of the testbed).
SOCKET_ENV = "DBLP_ROUND_SOCKET"
#: The player's socket, in the run's state dir (short: sun_path holds 107 bytes).
SOCKET_NAME = "rounds.sock"


@dataclass
class RoundGate:
    """Which begins to acknowledge and when the loss goes on and off, message by message.

    `begin`/`end` return actions in order: ("on", r), ("off", r), ("ack", reply_to, r, hit).
    The caller switches the loss for "on"/"off" before it sends the acks that follow.
    """

    world: int
    hits: frozenset[int]
    ended: dict[int, int] = field(default_factory=dict)  # rank -> last round it ended
    open: int | None = None  # the hit round whose loss is on
    done: set[int] = field(default_factory=set)  # hit rounds whose loss went on and off
    waiting: list[tuple[object, int, int]] = field(default_factory=list)  # (reply_to, rank, r)

    def _all_ended(self, r: int) -> bool:
        return r < 0 or (len(self.ended) == self.world and min(self.ended.values()) >= r)

    def begin(self, reply_to: object, rank: int, r: int) -> list[tuple]:
        self.waiting.append((reply_to, rank, r))
        return self._release()

    def end(self, rank: int, r: int) -> list[tuple]:
        self.ended[rank] = max(r, self.ended.get(rank, r))
        out: list[tuple] = []
        if self.open is not None and self._all_ended(self.open):
            out.append(("off", self.open))
            self.done.add(self.open)
            self.open = None
        return out + self._release()

    def _release(self) -> list[tuple]:
        out: list[tuple] = []
        still = []
        began: dict[int, set[int]] = {}
        for _, rank, r in self.waiting:
            began.setdefault(r, set()).add(rank)
        for reply_to, rank, r in sorted(self.waiting, key=lambda w: w[2]):
            if self.open is not None and r != self.open:
                still.append((reply_to, rank, r))  # a later round waits for the window to close
                continue
            if r in self.hits and r not in self.done and self.open is None:
                if len(began[r]) < self.world or not self._all_ended(r - 1):
                    still.append((reply_to, rank, r))  # a rank is not in the round yet
                    continue
                out.append(("on", r))
                self.open = r
            out.append(("ack", reply_to, r, r == self.open))
        self.waiting = still
        return out


class RoundPlayer:
    """The socket thread: feeds the gate and runs `on(r)` / `off(r)` (the scheduler's). A
    switch that fails is kept for `close()` to raise, and the ranks are still acknowledged:
    the run fails at its end, naming the error, instead of hanging on every later round."""

    def __init__(
        self,
        path: Path,
        world: int,
        hits: set[int],
        on: Callable[[int], None],
        off: Callable[[int], None],
    ) -> None:
        self.path = Path(path)
        self.gate = RoundGate(world, frozenset(hits))
        self._on, self._off = on, off
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.sock.settimeout(0.2)
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="round player", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        make_realtime()  # an ack must not wait behind the workers for a CPU
        try:
            while not self._stop.is_set():
                try:
                    data, addr = self.sock.recvfrom(64)
                except TimeoutError:
                    continue
                self._handle(data, addr)
        except BaseException as e:  # noqa: BLE001 - reported by close(), never lost in a thread
            self.error = e

    def _handle(self, data: bytes, addr: str) -> None:
        try:
            what, r_s, rank_s = data.decode().split()
            r, rank = int(r_s), int(rank_s)
        except ValueError:
            return  # not ours: ignore, as the transport ignores a stray datagram
        if what == "begin" and addr:
            actions = self.gate.begin(addr, rank, r)
        elif what == "end":
            actions = self.gate.end(rank, r)
        else:
            return
        for act in actions:
            if act[0] in ("on", "off"):
                try:
                    (self._on if act[0] == "on" else self._off)(act[1])
                except Exception as e:  # noqa: BLE001 - the ranks go on; close() reports it
                    self.error = self.error or e
            else:
                with contextlib.suppress(OSError):  # a rank that gave up and left
                    self.sock.sendto((f"ack {act[2]}" + " hit" * act[3]).encode(), act[1])

    def close(self) -> None:
        """Stop serving and remove the socket; raises what failed in the thread."""
        self._stop.set()
        self._thread.join(5.0)
        self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self.error is not None:
            raise RuntimeError(f"round player failed: {self.error}") from self.error
