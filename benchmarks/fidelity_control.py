"""The fidelity verdict, validated both ways (issue 20, item 6): a run the CPU damaged must be
judged unfaithful, and a run judged faithful must not be damaged.

    sudo python -m benchmarks.fidelity_control [--shapes allreduce,demo-train,mnist1d,allreduce-8]
        [--busy 2] [--calibrations 3] [--out results/fidelity-control-<time>]

Per shape (SHAPES), three `testbed run --burst none --json` runs (CONDITIONS), one after another:
alone, `--dilation auto` with a fresh dilation cache (<out>/cache-<shape>.json), so it calibrates
on this machine alone; busy, `--dilation 1` while `--busy` processes spin (started and ended here,
by their PIDs), with alone's cache, where an explicit-D run's verdict finds the shape's
calibration reference at that D; busy-auto, `--dilation auto` with the busy loops and another
fresh cache, so it calibrates under load. Every run gets DBLP_TESTBED_CALIBRATIONS
(`--calibrations`, calibration runs per D behind the verdict's tolerance) and goes to <out>/runs/.

Damage is a row's calm p50 over its shape's alone p50, minus 1 (summaries hold emulated times,
so rows at different D compare directly). The reference is the alone run at the D auto chose;
the issue asks for D = 1, or D = 4 where D = 1 is not faithful alone: the same when auto picks
D = 1, else the smallest faithful D of alone's calibration (2 or 4). The verdict passes (`check`)
when a row damaged by more than DAMAGE is unfaithful, a faithful row is within DAMAGE of the
reference, and the alone run is faithful.

Prints a markdown table (also <out>/fidelity_control.md) and "k of n rows ok; misses: ...". It
reports, it does not assert: exit 0, or 1 when a run printed no summary at all. Takes tens of
minutes for all four shapes; each calibration is a whole short run. Needs root.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from analysis import fidelity, schema
from analysis.fidelity import DAMAGE  # the verdict's own margin: one declaration
from benchmarks.allreduce_runs import RunFailed, testbed_run
from testbed.run.dilation import CALIBRATION_DIR, CALIBRATIONS_ENV
from testbed.run.dilation_cache import CACHE_ENV

#: A hard stop per run (calibrations included); the run's own progress timeout comes first.
RUN_TIMEOUT_S = 4 * 3600
REASONS_MAX = 120
NO_SUMMARY = "no summary"
PR_SET_PDEATHSIG = 1  # prctl(2)
SPIN = "while True: pass"

SHAPES: dict[str, tuple[str, ...]] = {
    # the default heavy all-reduce on the k=4 fat-tree
    "allreduce": ("--workload", "allreduce", "--workers", "4", "--size-mib", "1",
                  "--rounds", "60", "--seed", "5"),
    # the demo's run (testbed/sweeps/demo.py): the defaults, the digits CNN, seed 0
    "demo-train": ("--seed", "0"),
    # the reproduction's training (reproduce.py TRAIN_BASE without its D = 2): the recipe's
    # lr, batch and epochs are the model's defaults; two epochs, like its dose-response runs
    "mnist1d": ("--workload", "train", "--model", "mnist1d", "--steps", "62"),
    # k=4 holds 16 hosts
    "allreduce-8": ("--workload", "allreduce", "--workers", "8", "--size-mib", "1",
                    "--rounds", "60", "--seed", "5"),
}  # fmt: skip


@dataclass(frozen=True)
class Condition:
    name: str
    dilation: str
    busy: bool
    cache: str  # the cache file's suffix: conditions with the same one share the file


CONDITIONS = (
    Condition("alone", "auto", busy=False, cache=""),
    Condition("busy", "1", busy=True, cache=""),
    Condition("busy-auto", "auto", busy=True, cache="-busy-auto"),
)


@dataclass(frozen=True)
class Row:
    shape: str
    condition: str
    status: str
    dilation: float | None = None
    faithful: bool | None = None
    calm_ratio: float | None = None
    reference: dict[str, Any] | None = None  # the verdict's calibration reference
    p50_ms: float | None = None
    reasons: tuple[str, ...] = ()
    alone_p50_ms: float | None = None  # the shape's alone run's: the damage's reference
    run_dir: str | None = None


def run_flags(shape: str, cond: Condition, out: Path) -> list[str]:
    """The `testbed run` flags of one shape under one condition."""
    return [*SHAPES[shape], "--burst", "none", "--dilation", cond.dilation,
            "--label", f"{shape}-{cond.name}", "--out", str(out / "runs")]  # fmt: skip


def cache_file(out: Path, shape: str, cond: Condition) -> Path:
    return out / f"cache-{shape}{cond.cache}.json"


def run_env(base: Mapping[str, str], cache: Path, calibrations: int) -> dict[str, str]:
    return {**base, CACHE_ENV: str(cache), CALIBRATIONS_ENV: str(calibrations)}


def row_of(shape: str, condition: str, summary: dict[str, Any]) -> Row:
    f = summary.get("fidelity") or {}
    return Row(
        shape, condition, str(summary.get("status") or "no status"), summary.get("dilation"),
        summary.get("faithful"), f.get("calm_bound_ratio"), f.get("reference"),
        summary.get("p50_ms"), tuple(f.get("reasons") or ()), None, summary.get("run_dir"),
    )  # fmt: skip


def with_reference(row: Row, rows: Sequence[Row]) -> Row:
    """`row` with its shape's alone p50 from `rows` (None: no such run finished ok)."""
    alone = [r for r in rows if (r.shape, r.condition, r.status) == (row.shape, "alone", "ok")]
    return replace(row, alone_p50_ms=alone[0].p50_ms if alone else None)


def damage(p50_ms: float | None, reference_p50_ms: float | None) -> float | None:
    """How much slower than its reference a run's calm p50 is (0.1: 10%); None: no figure."""
    if p50_ms is None or reference_p50_ms is None or reference_p50_ms <= 0:
        return None
    return p50_ms / reference_p50_ms - 1


def expected(row: Row) -> str:
    d = damage(row.p50_ms, row.alone_p50_ms)
    if d is None:
        return "—"
    if abs(d) > DAMAGE:
        return "unfaithful"
    return "faithful" if row.condition == "alone" else "either"


def check(row: Row) -> str:
    """`ok` when the verdict agrees with the damage (the issue's done-when), else why not."""
    if row.status != "ok":
        return f"not checked: run {row.status}"
    if row.faithful is None:
        return "not judged"
    d = damage(row.p50_ms, row.alone_p50_ms)
    if d is None:
        why = "the run has no p50" if row.p50_ms is None else "no alone run of the shape with a p50"
        return f"not checked: {why}"
    if row.condition == "alone" and not row.faithful:
        return "MISSED: alone but unfaithful"
    if row.faithful and d > DAMAGE:
        return f"MISSED: damaged but passed ({d:+.1%})"
    if row.faithful and d < -DAMAGE:
        return f"MISSED: passed but off by {d:+.1%}"
    return "ok"


def num(x: Any, fmt: str) -> str:
    try:
        return "—" if x is None else format(float(x), fmt)
    except (TypeError, ValueError):
        return str(x)


def verdict(faithful: bool | None) -> str:
    return "not judged" if faithful is None else str(bool(faithful)).lower()


def reference_cell(ref: dict[str, Any]) -> str:
    calm, d = num(ref.get("calm_ratio"), ".2f"), num(ref.get("dilation"), "g")
    return f"{calm} (D={d}, {ref.get('source', '—')})" if ref else "—"


def reasons_cell(reasons: Sequence[str]) -> str:
    text = "; ".join(reasons)
    return text if len(text) <= REASONS_MAX else text[: REASONS_MAX - 1] + "…"


HEADER = ("shape", "condition", "status", "D", "faithful", "calm/bound", "reference calm/bound",
          "tolerance", "calm p50 ms", "damage", "expected", "check", "reasons")  # fmt: skip


def cells(row: Row) -> tuple[str, ...]:
    ref = row.reference if isinstance(row.reference, dict) else {}
    d = damage(row.p50_ms, row.alone_p50_ms)
    return (row.shape, row.condition, row.status, num(row.dilation, "g"), verdict(row.faithful),
            num(row.calm_ratio, ".2f"), reference_cell(ref), num(ref.get("tolerance"), ".3g"),
            num(row.p50_ms, ".2f"), "—" if d is None else f"{d:+.1%}", expected(row), check(row),
            reasons_cell(row.reasons))  # fmt: skip


def one_calibration_tolerance(run_dir: Path) -> tuple[float, float, int] | None:
    """(tolerance, s, dof) of one calibration against one run, t * s * sqrt(2), from an auto
    run's repeated calibrations (at its D and above, all faithful): what MACHINE_TOLERANCE
    holds for its workload. None without repeats."""
    by_d: dict[float, list[float]] = {}
    chosen = schema.read_run_info(run_dir).dilation
    for path in sorted((run_dir / CALIBRATION_DIR).glob("*/run.json")):
        if path.parent.is_symlink():
            continue
        info = schema.read_run_info(path.parent)
        ratio = (info.fidelity or {}).get("calm_bound_ratio")
        if info.dilation >= chosen and info.faithful is True and ratio is not None:
            by_d.setdefault(info.dilation, []).append(float(ratio))
    s, dof, _ = fidelity.spread(list(by_d.values()))
    return (fidelity.t_bound(s, dof, 1, 1), s, dof) if dof else None


def tolerance_lines(rows: Sequence[Row]) -> list[str]:
    """Per alone row: the one-calibration tolerance its calibrations measure."""
    out = []
    for r in rows:
        if r.condition != "alone" or r.status != "ok" or not r.run_dir:
            continue
        if (m := one_calibration_tolerance(Path(r.run_dir))) is not None:
            out.append(f"- {r.shape}: one-calibration tolerance {m[0]:.3f} "
                       f"(s {m[1]:.2%}, {m[2]} dof; t * s * sqrt(2))")  # fmt: skip
    return out


def markdown_line(values: Sequence[str]) -> str:
    return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"


def table(rows: Sequence[Row]) -> str:
    lines = [markdown_line(HEADER), markdown_line(["---"] * len(HEADER))]
    return "\n".join(lines + [markdown_line(cells(r)) for r in rows])


def summary_line(rows: Sequence[Row]) -> str:
    checks = [(f"{r.shape} {r.condition}", check(r)) for r in rows]
    misses = [f"{who}: {c}" for who, c in checks if c.startswith("MISSED")]
    other = [f"{who}: {c}" for who, c in checks if c != "ok" and not c.startswith("MISSED")]
    ok = sum(c == "ok" for _, c in checks)
    return (f"{ok} of {len(rows)} rows ok; misses: {'; '.join(misses) or 'none'}"
            + (f"; not checked: {'; '.join(other)}" if other else ""))  # fmt: skip


@contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """n processes that only burn CPU; each is ended by its own PID, and by the kernel if
    this process dies first (PR_SET_PDEATHSIG): two loops left behind by a killed benchmark
    once ran under every row of the next one."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN], preexec_fn=_die_with_parent)
             for _ in range(n)]  # fmt: skip
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def say(text: str) -> None:  # progress, on stderr
    print(text, file=sys.stderr, flush=True)


def run_one(args: argparse.Namespace, shape: str, cond: Condition, step: str) -> Row:
    """One run of the shape under the condition, as a row (a failed run's too)."""
    flags, cache = run_flags(shape, cond, args.out), cache_file(args.out, shape, cond)
    if cond.dilation == "auto":  # calibrates afresh, not from an earlier --out's cache
        cache.unlink(missing_ok=True)
    say(f"{step} {shape} {cond.name}: testbed run {shlex.join(flags)}")
    env = run_env(os.environ, cache, args.calibrations)
    with busy_loops(args.busy if cond.busy else 0):
        try:
            summary = testbed_run(f"{shape}-{cond.name}", flags, env, RUN_TIMEOUT_S)
        except RunFailed as e:
            say(f"{step} {shape} {cond.name}: {e}")
            return Row(shape, cond.name, NO_SUMMARY)
    row = row_of(shape, cond.name, summary)
    say(f"{step} {shape} {cond.name}: {row.status}, D={num(row.dilation, 'g')}, "
        f"faithful {verdict(row.faithful)}, p50 {num(row.p50_ms, '.2f')} ms")  # fmt: skip
    return row


def shape_list(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names or (unknown := [n for n in names if n not in SHAPES]):
        what = f"unknown shape {', '.join(unknown)}" if names else "no shape given"
        raise argparse.ArgumentTypeError(f"{what} (known: {', '.join(SHAPES)})")
    return names


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fidelity_control",
                                 description=__doc__.split("\n\n")[0])  # fmt: skip
    ap.add_argument("--shapes", type=shape_list, default=tuple(SHAPES),
                    help=f"comma list (default all: {','.join(SHAPES)})")  # fmt: skip
    ap.add_argument("--busy", type=int, default=2, help="CPU-burning processes (default 2)")
    ap.add_argument("--calibrations", type=int, default=3,
                    help=f"{CALIBRATIONS_ENV}: calibration runs per D (default 3)")  # fmt: skip
    out = Path(f"results/fidelity-control-{time.strftime('%Y%m%d-%H%M%S')}")
    ap.add_argument("--out", type=Path, default=out, help="results/fidelity-control-<time>")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the busy loops and the run in progress are ended
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if os.geteuid() != 0:
        say("fidelity_control needs root (testbed run builds network namespaces)")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    plan = [(shape, cond) for shape in args.shapes for cond in CONDITIONS]
    rows: list[Row] = []
    print(table([]), flush=True)
    for i, (shape, cond) in enumerate(plan, 1):
        row = run_one(args, shape, cond, f"[{i}/{len(plan)}]")
        rows.append(with_reference(row, [*rows, row]))
        print(markdown_line(cells(rows[-1])), flush=True)
        (args.out / "fidelity_control.md").write_text(f"{table(rows)}\n\n{summary_line(rows)}\n")
    print(summary_line(rows))
    if lines := tolerance_lines(rows):
        print("\n".join(["", "MACHINE_TOLERANCE's measure, per alone row:", *lines]))
        with (args.out / "fidelity_control.md").open("a") as md:
            md.write("\n".join(["", "MACHINE_TOLERANCE's measure, per alone row:", *lines, ""]))
    return 1 if any(r.status == NO_SUMMARY for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
