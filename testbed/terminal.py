"""What the testbed prints: consoles, the live progress line of a run, and tables.

Lines that programs and tests read (a sweep's "4 done, 0 to run") must not depend on the
terminal's width: a console from `console()` never wraps a printed line, and into a pipe or a
log (not a terminal) it lays tables out at `LOG_WIDTH` whatever COLUMNS says.
"""

from __future__ import annotations

import time

import pandas as pd
from rich.console import Console
from rich.table import Table

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
