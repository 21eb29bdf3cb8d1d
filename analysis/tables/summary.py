"""One run's end-to-end summary (the orchestrator's --json line)."""

from __future__ import annotations

import math
from pathlib import Path

from analysis.load import load_run
from analysis.stats import quantile
from analysis.tables.common import round_level
from analysis.tables.metrics import run_metrics


def summary(run_dir: Path) -> dict:
    """One run's end-to-end summary (the orchestrator's --json line).

    Every value is a number or None (no data, e.g. no burst rounds, no evaluations), so a
    program can read it; each quantile's `<name>_rule` says what the number is ("p50 (n=90)",
    or "max (n=11)" when too few samples for the quantile). Numbers keep 4 significant digits
    (the line is read by people too).
    """
    runs = load_run(run_dir)
    rl = round_level(runs)
    m = run_metrics(runs).iloc[0]
    lat = rl["latency_ms"].to_numpy()
    inb = rl.loc[rl["in_burst"], "latency_ms"].to_numpy()
    outb = rl.loc[~rl["in_burst"], "latency_ms"].to_numpy()

    def num(x: float) -> float | None:
        """4 significant digits: 0.9721 and 647.9, not 0.9721448421478271."""
        return None if x is None or math.isnan(x) else float(f"{x:.4g}")

    out: dict = {}
    for name, values, p in (
        ("p50_ms", lat, 0.50),
        ("p99_ms", lat, 0.99),
        ("p99_in_burst_ms", inb, 0.99),
        ("p50_no_burst_ms", outb, 0.50),
    ):
        qv = quantile(values, p)
        out[name], out[f"{name}_rule"] = num(qv.number), qv.rule
    return {
        **out,
        "delivered_loss_mean": num(m["loss_mean"]),
        "bursts": int(m["bursts"]),
        "comm_fraction": num(m["comm_fraction"]),
        "final_acc": num(m["final_acc"]),
    }
