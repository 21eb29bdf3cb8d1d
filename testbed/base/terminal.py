"""What the testbed prints: consoles, the live progress line of a run, the progress bar over
many runs, and tables.

Lines that programs and tests read (a sweep's "4 done, 0 to run") must not depend on the
terminal's width: a console from `console()` never wraps a printed line, and into a pipe or a
log (not a terminal) it lays tables out at `LOG_WIDTH` whatever COLUMNS says. Live displays
(the status line, the progress bar) are drawn on a terminal only and never printed into a log.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pandas as pd
import rich.progress as rp
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

#: Width for tables printed into a pipe or log, where rich would otherwise wrap at 80.
LOG_WIDTH = 200


def console(stderr: bool = False) -> Console:
    """A console whose lines stay whole (soft wrap); LOG_WIDTH wide when not a terminal."""
    out = Console(stderr=stderr, soft_wrap=True)
    if not out.is_terminal:
        out = Console(stderr=stderr, soft_wrap=True, width=LOG_WIDTH)
    return out


def rich_table(title: str, df: pd.DataFrame) -> Table:
    t = Table(title=title, show_lines=False)
    for c in df.columns:
        t.add_column(str(c), overflow="fold")
    for row in df.itertuples(index=False):
        t.add_row(*(str(v) for v in row))
    return t


def print_table(title: str, df: pd.DataFrame) -> None:
    """A table on stdout, unwrapped when stdout is a log rather than a terminal."""
    console().print(rich_table(title, df))


class Progress:
    """A one-line live status (step, epoch, round latency, delivered loss, ETA) on stderr."""

    def __init__(self, out: Console):
        self.console = out
        self.started = time.monotonic()
        self.status = out.status("starting", spinner="dots")
        self.status.start()

    def __call__(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "phase":
            self.console.log(ev["what"])
        elif kind == "t0":
            self.console.log("first training step: burst schedule started")
            self.t0 = time.monotonic()
        elif kind == "step":
            step, total = ev.get("step", 0), ev.get("steps_total") or 0
            elapsed = time.monotonic() - getattr(self, "t0", self.started)
            eta = elapsed / (step + 1) * (total - step - 1) if total else float("nan")
            self.status.update(
                f"step {step + 1}/{total}  epoch {ev.get('epoch', 0)}  "
                f"round {ev.get('round_ms', float('nan')):.0f} ms  "
                f"loss {ev.get('delivered_loss', 0.0):.2%}  ETA {eta:.0f} s"
            )
        elif kind == "eval":
            self.console.log(f"eval at step {ev.get('step')}: test acc {ev.get('test_acc'):.3f}")

    def close(self) -> None:
        self.status.stop()


class _EtaColumn(rp.ProgressColumn):
    """`ETA 0:03:12` from the caller's estimate (rich's own needs many quick updates)."""

    def __init__(self, eta_s) -> None:
        super().__init__()
        self.eta_s = eta_s

    def render(self, task: rp.Task) -> Text:
        s = self.eta_s()
        return Text("ETA " + ("-:--:--" if s is None else str(timedelta(seconds=round(s)))))


class RunsProgress:
    """A progress bar over runs on stderr: runs done / total, elapsed, ETA; the current run's
    steps move the bar within that run. Drawn only on a terminal (into a pipe or a log the
    caller's plain lines carry the same news).

    ETA = what is left of the current run (from its step fraction, else the per-run estimate)
    + the runs after it x the per-run estimate: the mean duration of the runs finished so far,
    else the caller's expected duration of the current run.
    """

    def __init__(self, out: Console, total: int, log_phases: bool = False) -> None:
        self.console = out
        self.total = total
        self.log_phases = log_phases
        self.durations: list[float] = []
        self.label, self.expected_s, self.started, self.fraction = "", None, None, 0.0
        # counts and times keep their width; the label, then the bar, give way on a narrow one
        label = Column(ratio=3, no_wrap=True, overflow="ellipsis", min_width=8)
        self.bar = rp.Progress(
            rp.TextColumn("{task.description}", markup=False, table_column=label),
            rp.BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=4)),
            rp.MofNCompleteColumn(),
            rp.TextColumn("runs"),
            rp.TimeElapsedColumn(),
            _EtaColumn(self.eta_s),
            console=out,
            transient=True,
            expand=True,
            disable=not out.is_terminal,
        )
        self.task = self.bar.add_task("", total=max(total, 1))

    def __enter__(self) -> RunsProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def say(self, line: str) -> None:
        """A plain line above the bar (no markup, no highlighting, never wrapped)."""
        self.console.print(line, markup=False, highlight=False)

    def start(self, label: str, expected_s: float | None = None) -> None:
        self.label, self.expected_s = label, expected_s
        self.started, self.fraction = time.monotonic(), 0.0
        self._update(label)

    def finish(self) -> float:
        """The current run ended (whatever its status); returns its duration in seconds."""
        took = time.monotonic() - (self.started or time.monotonic())
        self.durations.append(took)
        self.started, self.fraction = None, 0.0
        self._update(self.label)
        return took

    def on_event(self, ev: dict) -> None:
        """A run's `on_event`: its steps move the bar; phases are logged if asked."""
        kind = ev.get("event")
        if kind == "step":
            step, total = ev.get("step", 0) + 1, ev.get("steps_total") or 0
            self.fraction = min(1.0, step / total) if total else 0.0
            self._update(f"{self.label}  step {step}/{total or '?'}")
        elif kind == "phase" and self.log_phases:
            self.say(f"  {ev.get('what')}")

    def per_run_s(self) -> float | None:
        if self.durations:
            return sum(self.durations) / len(self.durations)
        return self.expected_s

    def eta_s(self) -> float | None:
        per_run = self.per_run_s()
        if per_run is None:
            return None
        done = len(self.durations)
        after = max(0, self.total - done - (1 if self.started is not None else 0))
        current = 0.0
        if self.started is not None:
            elapsed = time.monotonic() - self.started
            f = self.fraction
            current = elapsed * (1 - f) / f if f > 0 else max(0.0, per_run - elapsed)
        return current + after * per_run

    def _update(self, description: str) -> None:
        self.bar.update(
            self.task, description=description, completed=len(self.durations) + self.fraction
        )


def wall_time(seconds: float) -> str:
    """A duration for people: "42 s", "7 min 5 s", "1 h 3 min"."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
