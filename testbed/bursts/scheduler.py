"""Plays a burst schedule on a live network in the background and records what happened.

`prepare()` (before the run) starts one shell per namespace involved, installs every rule at
zero effect and starts the incast senders; `start(t0)` plays the schedule's set-point changes
(schedule.timeline) at t0 + D t (D the run's time dilation, 1 unless dilated; the rows' times
are then dilated too, and the run's merge maps them back) with absolute-deadline sleeps, all
namespaces of one instant in
parallel; `stop()` ends playback, reverts whatever is active, removes every rule and sender,
and returns one `bursts` row per event that was due. Cleanup is registered with
`net.on_teardown`, so it also runs on exceptions, Ctrl-C and SIGTERM.

A round-aligned preset (`paper-*`) has no timeline: `serve_rounds()` starts the round player
(`rounds.py`), which switches each event on when its round begins and off when every rank has
ended it; its rows carry the round and NaN planned times.

Ground truth per row: planned times (t0 + schedule time), applied times (when the change's
acknowledgement came back from the namespace), and the drops counted by the mechanism's counter
between the event's applied start and end (for overlapping events on one link direction each
event counts the drops of its own window).
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import threading
import time
from itertools import groupby
from typing import Any

from testbed.bursts.impairments import LOSS_BACKENDS, Egress, Impairment, egress_of, mechanism_for
from testbed.bursts.impairments.applier import ShellApplier, make_realtime, realtime_prefix
from testbed.bursts.rounds import RoundPlayer
from testbed.bursts.schedule import Change, Event, timeline
from topologies.model import Direction
from workloads.transport.dilation import TimeDilation

__all__ = ["BurstScheduler"]

#: wake this long before a deadline and spin the rest: time.sleep overshoots by ~0.1-1 ms
SPIN_S = 0.0005


class BurstScheduler:
    def __init__(
        self, net, events: list[Event], backend: str, run_id: str, time_scale: float = 1.0
    ) -> None:
        if backend not in LOSS_BACKENDS:
            raise ValueError(f"impairment backend {backend!r}: use {', '.join(LOSS_BACKENDS)}")
        self.net, self.events, self.backend, self.run_id = net, list(events), backend, run_id
        self.changes: list[Change] = timeline([e for e in self.events if e.round is None])
        self._by_round: dict[int, list[Event]] = {}
        for e in self.events:
            if e.round is not None:
                self._by_round.setdefault(e.round, []).append(e)
        self._player: RoundPlayer | None = None
        self.round_socket = None  # the player's socket path, once it serves
        self.t0: float | None = None
        self.dilation = TimeDilation(time_scale)
        self._shells: dict[str, ShellApplier] = {}
        self._mechs: dict[str, Impairment] = {}
        self._prepared: list[Impairment] = []
        self._egress: dict[Direction, Egress] = {}
        self._applied_start: dict[tuple[int, Direction], float] = {}
        self._applied_end: dict[tuple[int, Direction], float] = {}
        self._count_start: dict[tuple[int, Direction], int] = {}
        self._drops: dict[tuple[int, Direction], int] = {}
        self._last_count: dict[tuple[Direction, str], int] = {}
        self._active: dict[tuple[Direction, str], Change] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.error: BaseException | None = None

    # ---- set-up ------------------------------------------------------------------------------

    def shell(self, node: str) -> ShellApplier:
        if node not in self._shells:
            prefix = ["mnexec", "-a", str(self.net.node(node).pid), *realtime_prefix()]
            sh = ShellApplier(prefix, node)
            self.net.register_process(sh.proc, f"burst applier shell in {node}")
            self._shells[node] = sh
        return self._shells[node]

    def spawn(self, host: str, argv: list[str]) -> subprocess.Popen:
        # real-time too: an idle sender sleeps in select() and must wake on time under load
        proc = subprocess.Popen(
            ["mnexec", "-a", str(self.net.node(host).pid), *realtime_prefix(), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        self.net.register_process(proc, f"incast sender in {host}")
        return proc

    def _mechanism(self, kind: str) -> Impairment:
        """The registry's mechanism for kind; one instance each (netem's leaf: loss and delay)."""
        cls = mechanism_for(kind, self.backend)
        made = [m for m in self._mechs.values() if type(m) is cls]
        return made[0] if made else cls.on(self)

    def prepare(self) -> None:
        """Install everything at zero effect; before the run, so no event pays for set-up."""
        self.net.on_teardown(self._cleanup)
        for e in self.events:
            if e.kind not in self._mechs:
                self._mechs[e.kind] = self._mechanism(e.kind)
            self._egress.setdefault(e.direction, egress_of(self.net.topo, e.direction))
        for mech in dict.fromkeys(self._mechs.values()):  # netem serves loss and delay: once
            kinds = {k for k, m in self._mechs.items() if m is mech}
            evs = [e for e in self.events if e.kind in kinds]
            egs = [self._egress[d] for d in dict.fromkeys(e.direction for e in evs)]
            self._prepared.append(mech)  # before prepare: a half-done prepare is closed too
            mech.prepare(egs, evs)
            if mech.still_when_idle:
                for d, n in mech.drops_many(egs).items():
                    for k in kinds:
                        self._last_count[(d, k)] = n
        for sh in self._shells.values():  # every shell is alive and in its namespace
            sh.run(["true"])

    # ---- playback ----------------------------------------------------------------------------

    def start(self, t0_monotonic: float) -> None:
        """Play the schedule with t = 0 at `t0_monotonic` (CLOCK_MONOTONIC seconds)."""
        if self._thread is not None:
            raise RuntimeError("BurstScheduler.start called twice")
        self.t0 = t0_monotonic
        self._thread = threading.Thread(target=self._play, name="burst scheduler", daemon=True)
        self._thread.start()

    def _at(self, t_s: float) -> float:
        """The monotonic time of schedule time `t_s` (seconds after t0, emulated)."""
        assert self.t0 is not None
        return self.dilation.deadline(self.t0, t_s)

    def _sleep_until(self, deadline: float) -> bool:
        """False if stopped before the deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if left > SPIN_S:
                if self._stop.wait(left - SPIN_S):
                    return False
            elif self._stop.is_set():
                return False

    def _play(self) -> None:
        make_realtime()
        try:
            for t, group in groupby(self.changes, key=lambda c: c.t_s):
                if not self._sleep_until(self._at(t)):
                    return
                self._apply_group(list(group))
        except BaseException as e:  # noqa: BLE001 - reported by stop(), never lost in a thread
            self.error = e

    def serve_rounds(self, path, world: int) -> None:
        """Start the round player on a Unix socket at `path`, for `world` ranks (after
        `prepare`, before the workers start)."""
        if self._player is not None:
            raise RuntimeError("BurstScheduler.serve_rounds called twice")
        self._player = RoundPlayer(
            path, world, set(self._by_round), self._round_on, self._round_off
        )
        self.round_socket = path

    def _round_groups(self, r: int) -> dict[tuple[Direction, str], list[Event]]:
        groups: dict[tuple[Direction, str], list[Event]] = {}
        for e in self._by_round.get(r, ()):
            groups.setdefault((e.direction, e.kind), []).append(e)
        return groups

    def _round_on(self, r: int) -> None:
        """Every event of round r on, the strongest per link direction (as `timeline` composes)."""
        group = []
        for (d, k), evs in self._round_groups(r).items():
            top = max(evs, key=lambda e: e.magnitude)
            group.append(Change(math.nan, d, k, top.magnitude, top, tuple(e.event_id for e in evs)))
        self._apply_group(group)

    def _round_off(self, r: int) -> None:
        group = [
            Change(math.nan, d, k, None, None, (), tuple(e.event_id for e in evs))
            for (d, k), evs in self._round_groups(r).items()
        ]
        self._apply_group(group)

    def _apply_group(self, group: list[Change]) -> None:
        was_active = set(self._active)
        tickets = []
        for c in group:
            mech, eg = self._mechs[c.kind], self._egress[c.direction]
            if c.value is None:
                tickets.append(mech.revert(eg, c.kind))
                self._active.pop((c.direction, c.kind), None)
            else:
                tickets.append(mech.apply(eg, c.value, c.event))
                self._active[(c.direction, c.kind)] = c
        for mech in dict.fromkeys(self._mechs[c.kind] for c in group):
            mech.flush()
        for c, ticket in zip(group, tickets, strict=True):
            applied = ticket.wait()
            for eid in c.ends:
                self._applied_end[(eid, c.direction)] = applied
            for eid in c.starts:
                self._applied_start[(eid, c.direction)] = applied
        self._count(group, was_active)

    def _count(self, group: list[Change], was_active: set[tuple[Direction, str]]) -> None:
        """Read the drop counters of the link directions where an event starts or ends."""
        bounds = [c for c in group if c.starts or c.ends]
        by_mech: dict[int, tuple[Impairment, list[Egress]]] = {}
        for c in bounds:
            mech = self._mechs[c.kind]
            by_mech.setdefault(id(mech), (mech, []))[1].append(self._egress[c.direction])
        counts = {}
        for mech, egs in by_mech.values():
            for d, n in mech.drops_many(list(dict.fromkeys(egs))).items():
                counts[(id(mech), d)] = n
        for c in bounds:
            mech, slot = self._mechs[c.kind], (c.direction, c.kind)
            before = self._last_count.get(slot)
            count = counts[(id(mech), c.direction)]
            self._last_count[slot] = count
            for eid in c.ends:
                key = (eid, c.direction)
                self._drops[key] = count - self._count_start.get(key, count)
            # A loss rule at probability 0 drops nothing, so its counter at the event's start is
            # the one read when it was last idle (reading it after the apply would miss drops).
            idle_before = slot not in was_active
            for eid in c.starts:
                start = before if mech.still_when_idle and idle_before else count
                self._count_start[(eid, c.direction)] = count if start is None else start

    # ---- stop and clean-up -------------------------------------------------------------------

    def stop(self) -> list[dict[str, Any]]:
        """End playback, revert and remove everything, return the `bursts` rows."""
        t_stop = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)
        try:
            if self._player is not None:
                self._player, player = None, self._player
                try:
                    player.close()
                except RuntimeError as e:
                    self.error = self.error or e
            if self.error is None:
                self._end_active()
        finally:
            self._cleanup()
        if self.error is not None:
            raise RuntimeError(f"burst scheduler failed: {self.error}") from self.error
        return self.rows(t_stop)

    def _end_active(self) -> None:
        """Revert what is still on; events cut short end at their revert."""
        if not self._active:
            return
        now = time.monotonic()
        # in schedule (emulated) time; a round-aligned run may stop before t0
        t_s = math.nan if self.t0 is None else self.dilation.since(self.t0, now)
        cut = [
            Change(t_s, d, k, None, None, (), tuple(self._open_events(d, k)))
            for (d, k) in list(self._active)
        ]
        self._apply_group(cut)

    def _open_events(self, direction: Direction, kind: str) -> list[int]:
        return [
            e.event_id
            for e in self.events
            if e.direction == direction
            and e.kind == kind
            and (e.event_id, direction) in self._applied_start
            and (e.event_id, direction) not in self._applied_end
        ]

    def _cleanup(self) -> None:
        """Stop playback and remove everything (also the teardown path when stop() never ran)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._player is not None:
            self._player, player = None, self._player
            with contextlib.suppress(RuntimeError):  # stop() reports it; teardown must go on
                player.close()
        if self._thread is not None:
            self._thread.join(10.0)
        problems = []
        for mech in self._prepared:
            try:
                mech.close()
            except Exception as e:  # noqa: BLE001 - close the rest, then report
                problems.append(e)
        for sh in self._shells.values():
            sh.close()
        if problems:
            raise problems[0]

    def rows(self, t_stop: float | None = None) -> list[dict[str, Any]]:
        """One `bursts` row per event (per link direction) that was due before the stop: a
        time-windowed one planned before it, a round-aligned one whose round began."""
        t_stop = time.monotonic() if t_stop is None else t_stop
        out = []
        for e in self.events:
            key = (e.event_id, e.direction)
            if e.round is None:
                if self.t0 is None or self._at(e.planned_start_s) > t_stop:
                    continue
                planned = (self._at(e.planned_start_s), self._at(e.planned_end_s))
            elif key not in self._applied_start:
                continue
            else:
                planned = (math.nan, math.nan)
            out.append(
                {
                    "run_id": self.run_id,
                    "event_id": e.event_id,
                    "link": e.link,
                    "direction": str(e.direction),
                    "kind": e.kind,
                    "magnitude": float(e.magnitude),
                    "round": -1 if e.round is None else e.round,
                    "planned_start_s": planned[0],
                    "planned_end_s": planned[1],
                    "applied_start_s": self._applied_start.get(key, math.nan),
                    "applied_end_s": self._applied_end.get(key, math.nan),
                    "drops": int(self._drops.get(key, 0)),
                }
            )
        return out
