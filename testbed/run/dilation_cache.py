"""What `--dilation auto` learned, kept per machine and network shape, so that the calibration
(up to four short runs) is paid once per shape rather than before every run.

An entry is a measurement, and runs can contradict it: an auto run that ends unfaithful at the D
it was given raises its shape's floor, so the next auto run of that shape calibrates above it
(`distrust`). Nothing lowers a floor; deleting the file (`testbed doctor` prints where it is)
starts over. The key is the machine (CPU count and model, kernel), the fields of
`SHAPE_FIELDS` and the hash of the preset's control (`Preset.control`): a calibration is the
run's network and senders under its bursts' CPU cost, so the seed, the bursts' magnitudes
(paper-60 ... paper-90 share one control) and the training recipe do not change it; the
workload and model are kept because a training run's compute competes for the same cores.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from testbed.run.dilation import CALIBRATION_DILATIONS
from testbed.spec import TOPOLOGY_FIELDS

__all__ = [
    "CACHE_ENV", "SHAPE_FIELDS", "Entry", "add_reference", "cache_path", "distrust", "entries",
    "lookup", "remember",
]  # fmt: skip

#: Overrides where the cache lives (tests point it at their own folder).
CACHE_ENV = "DBLP_TESTBED_CACHE"
#: What a calibration's verdict depends on, besides the machine.
SHAPE_FIELDS = (*TOPOLOGY_FIELDS, "topo_file", "workers", "workload", "model", "transport",
                "mtu", "size_mib", "pace_mbps", "threads")  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """The D to run this shape at (None: calibrate, above `floor`), how it was learned, and the
    shape's fidelity references by seed (`analysis.fidelity.Reference` as dicts), which every
    run of the shape and seed is judged against, at any D."""

    dilation: float | None
    floor: float  # every D at or below this was unfaithful here (0: none was)
    why: str
    at: str  # local time of the measurement
    references: dict[str, dict[str, Any]]

    def reference(self, seed: int) -> dict[str, Any] | None:
        return self.references.get(str(seed))

    def dilations(self) -> tuple[float, ...]:
        """The calibration ladder above the floor; at least its largest step."""
        above = tuple(d for d in CALIBRATION_DILATIONS if d > self.floor)
        return above or (max(CALIBRATION_DILATIONS[-1], 2 * self.floor),)


def cache_path() -> Path:
    """$DBLP_TESTBED_CACHE, else $XDG_CACHE_HOME/dblp-testbed/dilation.json (~/.cache/...)."""
    if env := os.environ.get(CACHE_ENV):
        return Path(env)
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "dblp-testbed" / "dilation.json"


def _machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "kernel": platform.release()}


def _shape(spec: Any) -> dict[str, Any]:
    """What a calibration's verdict depends on besides the machine: SHAPE_FIELDS, with a
    topology file by its content, and the CPU cost of the bursts (their control's hash)."""
    from testbed.bursts import presets

    data = {f: getattr(spec, f) for f in SHAPE_FIELDS}
    data["bursts_cpu"] = presets.load(spec.burst).control().hash
    if data["topo_file"] is not None:
        data["topo_file"] = hashlib.sha256(Path(data["topo_file"]).read_bytes()).hexdigest()
    return data


def shape_key(spec: Any) -> str:
    """12 hex digits naming this machine and the spec's shape."""
    blob = json.dumps(_shape(spec) | _machine(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _load(path: Path) -> dict[str, dict]:
    """The cache's entries; a missing or unreadable file is an empty cache (it is only a
    shortcut: the worst a lost entry costs is one calibration)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def entries(path: Path | None = None) -> dict[str, dict]:
    """Every entry, by shape key, as stored (`testbed doctor` shows them)."""
    return _load(path or cache_path())


def lookup(spec: Any, path: Path | None = None) -> Entry | None:
    raw = _load(path or cache_path()).get(shape_key(spec))
    try:
        return Entry(**{f: raw[f] for f in Entry.__dataclass_fields__}) if raw else None
    except (KeyError, TypeError):
        return None  # an entry of another format: calibrate again


def _store(spec: Any, entry: Entry, path: Path | None) -> Entry:
    """Write one entry atomically (rename), keeping the others."""
    path = path or cache_path()
    data = _load(path)
    shape = {k: str(v) for k, v in _shape(spec).items()}
    data[shape_key(spec)] = asdict(entry) | {"shape": shape}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)
    return entry


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def remember(
    spec: Any, dilation: float, why: str, path: Path | None = None, reference: dict | None = None
) -> Entry:
    """A calibration chose `dilation` for this shape, and measured the reference of the
    spec's seed (the references of other seeds came from other D's: they go)."""
    old = lookup(spec, path)
    refs = {str(spec.seed): reference} if reference else {}
    return _store(spec, Entry(dilation, old.floor if old else 0.0, why, _now(), refs), path)


def add_reference(spec: Any, reference: dict, path: Path | None = None) -> Entry | None:
    """Keep the reference of another seed of a shape already calibrated."""
    old = lookup(spec, path)
    if old is None:
        return None
    refs = old.references | {str(spec.seed): reference}
    return _store(spec, Entry(old.dilation, old.floor, old.why, old.at, refs), path)


def distrust(spec: Any, dilation: float, why: str, path: Path | None = None) -> Entry:
    """A run at `dilation` was unfaithful: the next auto run of this shape calibrates above it
    (and measures a new reference: the old one was made where runs now fail)."""
    old = lookup(spec, path)
    floor = max(dilation, old.floor if old else 0.0)
    why = f"a run at D={dilation:g} was unfaithful: {why}"
    return _store(spec, Entry(None, floor, why, _now(), {}), path)
