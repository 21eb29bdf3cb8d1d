"""Load run folders into tidy frames, each row tagged with what run it came from.

Every table row gets the run's identity from run.json (workload, transport, label, preset,
seed, spec_hash, repeat, status, unfaithful), so one groupby answers "per transport and preset"
across any number of runs. `label` separates the variants of one transport that a benchmark
compares side by side (two RTO minima, a bounded-time transport's modes, a phase-aware one's
phase modes and stop rule, a fixed tolerance).

Who is who comes from run.json too, never from a name: the runs frame carries the transport's
traits (TRAIT_COLUMNS: completion, uses_epsilon, phase_aware, and its role per comparison,
`role_paper` / `role_design`, "" where it takes no part) and the preset's role (`preset_role`:
calm | control | burst). A run.json without them (before schema 4) is refused, with the
command that adds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from analysis.schema import (
    TABLE_FILES,
    RunInfo,
    SchemaError,
    empty,
    read_run_info,
    read_table,
)

#: Columns joined from run.json onto every table row.
RUN_COLUMNS = (
    "run_id",
    "workload",
    "transport",
    "label",
    "preset",
    "seed",
    "spec_hash",
    "repeat",
    "status",
    "unfaithful",
    "not_judged",
)

#: The comparisons a transport may take a role in (traits.py): the paper's and the design's.
COMPARISONS = ("paper", "design")
#: The transport's traits and the preset's role, as columns of the runs frame.
TRAIT_COLUMNS = (
    "completion",
    "uses_epsilon",
    "phase_aware",
    *(f"role_{c}" for c in COMPARISONS),
    "preset_role",
)
MIGRATE = "python -m testbed.run.migrate"

#: Spec fields that may differ between the repeats of one experiment.
PER_REPEAT_FIELDS = frozenset({"seed", "repeat", "out", "run_id"})

#: Why an ok run was left out of the aggregates (`Runs.left_out`).
UNFAITHFUL_REASON = "unfaithful: the emulator's CPU distorted its timing (--include-unfaithful)"

#: Spec fields and their defaults: a run whose field differs says so in its label.
DEFAULT_TCP_RTO_MIN_MS = 200.0
DEFAULT_TIMEOUT_MODE = "adaptive"  # a bounded-time transport's timeout rule
DEFAULT_PHASE_MODE = "on"  # the adaptive phase controller
DEFAULT_STOP = "idle"  # a bounded-loss stage ends once the stream is idle


def _setting(spec: dict, params: dict, name: str, default: object) -> object:
    """A transport setting as the run played it (transport_params.config), else its spec's."""
    config = params.get("config")
    config = config if isinstance(config, dict) else {}
    value = config.get(name, spec.get(name))
    return default if value is None else value


def phase_mode(spec: dict, params: dict) -> str:
    """The phase controller's mode as run (run.json spec, transport_params):
    transport_params.phase.mode ("on" | "off" | "paper"), else (an older run.json) "off" when
    it recorded phases disabled, else the spec's."""
    phase = params.get("phase") or {}
    if phase.get("mode"):
        return str(phase["mode"])
    if phase.get("enabled") is False:
        return "off"
    return str(spec.get("phase") or DEFAULT_PHASE_MODE)


def fixed_tolerance(spec: dict, params: dict) -> float | None:
    """The one ε of a run without phases (a pinned run, or a fixed-tolerance transport's P):
    the pinned ε as run, else the spec's, else the stable-phase ε it defaults to."""
    phase = params.get("phase") or {}
    for value in (phase.get("pinned_epsilon"), spec.get("epsilon"), phase.get("eps_stable")):
        if value is not None:
            return float(value)
    return None


def label_of(info: RunInfo) -> str:
    """Display name of the run's transport variant, from its traits and what differs from the
    defaults, e.g. "tcp-rto5ms", "optireduce-fixed", "dblp-phase-off",
    "dblp (paper phase, stop early)", "mlt P=0.008"; the spec's `label` wins."""
    spec, params, traits = info.spec, info.transport_params, info.transport_traits
    if spec.get("label"):
        return str(spec["label"])
    name = info.transport or str(spec.get("transport", ""))
    rto = float(spec.get("tcp_rto_min_ms") or DEFAULT_TCP_RTO_MIN_MS)
    if traits.get("completion") == "exact" and rto != DEFAULT_TCP_RTO_MIN_MS:
        name += f"-rto{rto:g}ms"
    if traits.get("completion") == "bounded-time":
        mode = _setting(spec, params, "optireduce_mode", DEFAULT_TIMEOUT_MODE)
        if mode != DEFAULT_TIMEOUT_MODE:
            name += f"-{mode}"
    notes = []
    if traits.get("phase_aware"):
        mode = phase_mode(spec, params)
        if mode == "off":
            name += "-phase-off"
        elif mode != DEFAULT_PHASE_MODE:
            notes.append(f"{mode} phase")
    elif traits.get("uses_epsilon"):
        p = fixed_tolerance(spec, params)
        name += f" P={p:g}" if p is not None else ""
    if traits.get("uses_epsilon"):
        stop = _setting(spec, params, "stop", DEFAULT_STOP)
        if stop != DEFAULT_STOP:
            notes.append(f"stop {stop}")
    return f"{name} ({', '.join(notes)})" if notes else name


def _read_info(run_dir: Path) -> RunInfo:
    """run.json, or a SchemaError that names the folder and the first bad field; a run.json
    without the transport's traits or the preset's role is refused (it predates them)."""
    try:
        info = read_run_info(run_dir)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "run.json"
        raise SchemaError(
            f"{run_dir}/run.json does not match RunInfo ({e.error_count()} errors; "
            f"first: {where}: {first['msg']})"
        ) from e
    missing = [k for k, v in (("transport_traits", info.transport_traits or not info.transport),
                              ("preset_role", info.preset_role)) if not v]  # fmt: skip
    if missing:
        raise SchemaError(
            f"{run_dir}/run.json has no {' or '.join(missing)} (written before schema 4; "
            f"analysis reads roles from them, not from names): run `{MIGRATE} {run_dir}`"
        )
    return info


def _traits_row(info: RunInfo) -> dict:
    """TRAIT_COLUMNS of one run (a run without a transport: no completion, no roles)."""
    t = info.transport_traits
    roles = t.get("roles") or {}
    return {
        "completion": str(t.get("completion", "")),
        "uses_epsilon": bool(t.get("uses_epsilon", False)),
        "phase_aware": bool(t.get("phase_aware", False)),
        **{f"role_{c}": str(roles.get(c, "")) for c in COMPARISONS},
        "preset_role": info.preset_role,
    }


def _repeat_of(info: RunInfo) -> int | None:
    r = info.spec.get("repeat")
    return int(r) if r is not None else None


def _info_row(run_dir: Path, info: RunInfo) -> dict:
    return {
        "run_id": info.run_id,
        "workload": info.workload,
        "transport": info.transport or str(info.spec.get("transport", "")),
        "label": label_of(info),
        "preset": info.preset,
        "seed": info.seed,
        "spec_hash": info.spec_hash,
        "repeat": _repeat_of(info),
        "status": info.status,
        "reason": info.reason,
        "unfaithful": info.faithful is False,
        "not_judged": info.faithful is None,
        # judged by the verdict before the calibration reference (no p95 lateness recorded)
        "earlier_verdict": bool(info.fidelity) and "late_p95_ms" not in info.fidelity,
        "oversubscribed": info.oversubscribed,
        "dilation": info.dilation,
        "warnings": "; ".join(info.warnings),
        "rejections": {k: int(v) for k, v in info.rejections.items() if v},
        "rejected": int(sum(info.rejections.values())),
        "wall_s": info.wall_s,
        "t0_s": info.t0_s,
        "git_commit": info.git_commit,
        "git_dirty": info.git_dirty,
        "started_s": info.realtime_anchor_s,  # wall clock (epoch s) when the run began
        "dir": str(run_dir),
        "spec": dict(info.spec),
        "transport_params": dict(info.transport_params),
        **_traits_row(info),
    }


def _fill_repeats(runs: pd.DataFrame) -> pd.Series:
    """Repeat index: run.json's spec["repeat"], else the seed's rank within its group.

    Sweeps use seed = base_seed + repeat, so the rank of the seed recovers the repeat.
    """
    keys = ["workload", "label", "preset"]
    by_seed = runs.groupby(keys)["seed"].rank(method="dense").astype("int64") - 1
    return runs["repeat"].fillna(by_seed).astype("int64")


@dataclass(frozen=True)
class Runs:
    """Runs and their tables; each table carries RUN_COLUMNS. `runs` has one row per run."""

    runs: pd.DataFrame
    rounds: pd.DataFrame
    steps: pd.DataFrame
    evals: pd.DataFrame
    bursts: pd.DataFrame
    probes: pd.DataFrame
    #: Aggregate unfaithful ok runs too; False (`testbed report`'s default) leaves them out:
    #: their latencies measure the emulator's CPU as well as the network.
    include_unfaithful: bool = True

    def table(self, name: str) -> pd.DataFrame:
        return getattr(self, name)

    def only(self, run_ids: Iterable[str]) -> Runs:
        """The same runs and tables, restricted to run_ids."""
        keep = set(run_ids)
        return Runs(
            runs=self.runs[self.runs["run_id"].isin(keep)].reset_index(drop=True),
            include_unfaithful=self.include_unfaithful,
            **{
                name: df[df["run_id"].isin(keep)].reset_index(drop=True)
                for name in TABLE_FILES
                for df in [self.table(name)]
            },
        )

    def _kept(self) -> pd.Series:
        ok = self.runs["status"] == "ok"
        return ok if self.include_unfaithful else ok & ~self.runs["unfaithful"].astype(bool)

    def aggregated(self) -> Runs:
        """The runs a report may aggregate: status ok (and faithful unless
        `include_unfaithful`). A failed, interrupted or still-running run holds a partial
        measurement (a shorter training, an earlier accuracy), so it is listed apart, never
        averaged with complete ones."""
        return self.only(self.runs.loc[self._kept(), "run_id"])

    def left_out(self) -> pd.DataFrame:
        """The runs `aggregated` leaves out: run_id, group, repeat, status, reason; an ok run
        left out for its fidelity has status `unfaithful`."""
        cols = ["run_id", "workload", "label", "preset", "repeat", "status", "reason"]
        left = self.runs.loc[~self._kept(), cols].reset_index(drop=True)
        ok = left["status"] == "ok"
        return left.assign(
            status=left["status"].mask(ok, "unfaithful"),
            reason=left["reason"].mask(ok, UNFAITHFUL_REASON),
        )


def _tag(df: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Join the run identity onto a table's rows (the table's own columns win)."""
    extra = [c for c in RUN_COLUMNS if c == "run_id" or c not in df.columns]
    return df.merge(runs[extra], on="run_id", how="left")


def load_runs(run_dirs: Iterable[Path], include_unfaithful: bool = True) -> Runs:
    """Read run.json and every table of each folder; rows keyed by run.json's run_id.

    Table rows are re-keyed to run.json's run_id, so a folder that was renamed or whose
    workers used another id still joins with its own run.
    """
    infos, tables = [], {name: [] for name in TABLE_FILES}
    for d in run_dirs:
        d = Path(d)
        info = _read_info(d)
        infos.append(_info_row(d, info))
        for name in TABLE_FILES:
            t = read_table(d, name)
            if not t.empty:
                tables[name].append(t.assign(run_id=info.run_id))
    if not infos:
        raise ValueError("no run folders given")
    runs = pd.DataFrame(infos)
    if runs["run_id"].duplicated().any():
        dup = sorted(runs.loc[runs["run_id"].duplicated(), "run_id"])
        raise ValueError(f"run ids appear in more than one folder: {dup}")
    runs["repeat"] = _fill_repeats(runs)
    frames = {}
    for name, parts in tables.items():
        df = pd.concat(parts, ignore_index=True) if parts else empty(name)
        frames[name] = _tag(df, runs)
    return Runs(runs=runs, include_unfaithful=include_unfaithful, **frames)


def load_run(run_dir: Path) -> Runs:
    return load_runs([run_dir])


def origins(runs: Runs) -> pd.Series:
    """Time zero of each run (by run_id): run.json t0_s (first training step, where the
    burst schedule starts), else the first step's start, else the first round's start."""
    first_step = runs.steps.groupby("run_id")["t_start_s"].min()
    first_round = runs.rounds.groupby("run_id")["t_start_s"].min()
    t0 = runs.runs.set_index("run_id")["t0_s"].astype(float)
    return t0.fillna(first_step).fillna(first_round).rename("origin_s")


def mixed_specs(runs: Runs, keys: tuple[str, ...] = ("workload", "label", "preset")) -> list[str]:
    """Groups whose runs differ in more than the seed, each as "label/preset: fields".

    Repeats are aggregated as if they measured one thing; a group mixing, say, two link
    rates would silently average them, so the report names it instead.
    """
    out = []
    for key, g in runs.runs.groupby(list(keys)):
        specs = list(g["spec"])
        fields = sorted(
            {f for s in specs for f in s if f not in PER_REPEAT_FIELDS}
            - {f for f in specs[0] if all(s.get(f) == specs[0].get(f) for s in specs)}
        )
        if fields:
            out.append(f"{'/'.join(map(str, key))}: runs differ in {', '.join(fields)}")
    return out
