"""Per-rank metric files and the worker's stdout event stream.

Each rank appends its rows to DIR/rank{R}/{rounds,steps,evals}.jsonl, one JSON object per line,
flushed after every step, so a run that is killed keeps every step it finished; the orchestrator
merges and validates them into Parquet. Rows are checked against the schema's column names here,
so a typo fails at the first write rather than at the merge.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any

from analysis.schema import TABLES

_COLUMNS = {t: tuple(c.name for c in cols) for t, cols in TABLES.items()}


class JsonlTable:
    """Appends rows of one schema table to a JSONL file."""

    def __init__(self, path: Path, table: str, run_id: str) -> None:
        self.table = table
        self.run_id = run_id
        self._f: IO[str] = open(path, "a", buffering=1 << 16)  # noqa: SIM115 (closed in close())

    def write(self, row: dict[str, Any]) -> None:
        row = {"run_id": self.run_id, **row}
        if set(row) != set(_COLUMNS[self.table]):
            missing = sorted(set(_COLUMNS[self.table]) - set(row))
            extra = sorted(set(row) - set(_COLUMNS[self.table]))
            raise ValueError(f"{self.table} row: missing {missing}, extra {extra}")
        self._f.write(json.dumps(row, allow_nan=True) + "\n")

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()


class RankRecorder:
    """The files of one rank: rounds and steps on every rank, evals on rank 0, meta.json."""

    def __init__(self, out_dir: Path, rank: int, run_id: str) -> None:
        self.dir = Path(out_dir) / f"rank{rank}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rank = rank
        self.rounds = JsonlTable(self.dir / "rounds.jsonl", "rounds", run_id)
        self.steps = JsonlTable(self.dir / "steps.jsonl", "steps", run_id)
        self.evals = JsonlTable(self.dir / "evals.jsonl", "evals", run_id) if rank == 0 else None

    def write_rounds(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.rounds.write(row)

    def write_step(self, row: dict[str, Any]) -> None:
        self.steps.write(row)

    def write_eval(self, row: dict[str, Any]) -> None:
        if self.evals is None:
            raise RuntimeError("only rank 0 writes evals")
        self.evals.write(row)

    def write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.dir / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
        tmp.replace(self.dir / "meta.json")

    def flush(self) -> None:
        for t in (self.rounds, self.steps, self.evals):
            if t is not None:
                t.flush()

    def close(self) -> None:
        for t in (self.rounds, self.steps, self.evals):
            if t is not None:
                t.close()


def emit(event: str, **fields: Any) -> None:
    """One stdout JSON line for the orchestrator (rank 0 only), flushed at once."""
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()
