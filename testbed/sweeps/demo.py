"""`make demo`: the main job on its defaults, for the three transports, then their comparison.

Three runs of `testbed run --topo fattree --burst heavy` (k=4, 100 Mbit/s, 4 workers, the
digits CNN, seed 0) that differ only in `--transport`, so every transport meets the same
burst schedule; then one report over the three (results/demo-<time>/report.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from testbed.base.terminal import RunsProgress, console, rich_table, wall_time
from testbed.spec import RunSpec

TRANSPORTS = ("dblp", "optireduce", "tcp")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="make demo", description=__doc__.split("\n\n")[0],
        epilog="Each run uses the default --dilation auto: the first run of this shape on a "
        "machine calibrates (about 40 s per transport), later demos read the cache. Ctrl-C stops "
        "the demo after cleaning up the run in progress.",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=Path("results"), help="results root")
    out_root = ap.parse_args(argv).out
    term = console(stderr=True)
    if os.geteuid() != 0:
        term.print("make demo needs root (network namespaces, tc): run `make demo` as root")
        return 2
    from analysis.report import fmt_acc, fmt_num, write_report
    from testbed.run.dilation import cost
    from testbed.run.experiment import expected_duration_s, plan, run_experiment

    run_dirs, failed = [], []
    started = time.monotonic()
    with RunsProgress(term, len(TRANSPORTS), log_phases=True) as progress:
        for i, transport in enumerate(TRANSPORTS, 1):
            planned = plan(RunSpec(burst="heavy", transport=transport, seed=0))
            label = f"[{i}/{len(TRANSPORTS)}] {transport}"
            progress.say(f"{label}: testbed run --burst heavy --transport {transport}")
            progress.start(label, expected_duration_s(planned.spec))
            outcome = run_experiment(planned, out_root=out_root, on_event=progress.on_event)
            took = progress.finish()
            s = outcome.summary
            progress.say(
                f"{label}: {outcome.status} in {took:.0f} s, final acc "
                f"{fmt_acc(s.get('final_acc'))}, p50 {fmt_num(s.get('p50_ms'))} ms, "
                f"p99 {fmt_num(s.get('p99_ms'))} ms -> {outcome.run_dir}"
            )
            if outcome.status == "ok":
                run_dirs.append(outcome.run_dir)
            else:
                failed.append(f"{transport}: {outcome.reason}")
            if outcome.status == "interrupted":
                break  # the user asked to stop: no further runs
    if run_dirs:
        report_dir = out_root / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
        report = write_report(run_dirs, report_dir)
        term.rule("comparison")
        term.print(rich_table(report.headline_title, report.headline))
        term.print(f"report: {report_dir / 'report.md'}")
    term.print(f"demo wall time: {wall_time(time.monotonic() - started)}")
    term.print(cost(run_dirs))
    for f in failed:
        term.print(f"[red]failed[/red] {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
