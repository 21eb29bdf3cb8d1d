"""Give a run.json from before schema 4 what analysis now reads: `transport_traits` and
`preset_role`.

Analysis reads a transport's role and a preset's role from run.json, never from their names,
and refuses a run.json without them (analysis/load.py). This adds both to older run folders,
from the registry the run would write them from today (the transport's declared traits, the
preset's TOML `role`), and changes nothing else: the other fields, their order and
`schema_version` stay as written, since the tables beside them are unchanged.

    python -m testbed.run.migrate RUN_DIR [RUN_DIR ...]

A run.json that already has both is left alone; one whose transport or preset is unknown is
named and left alone, and the command exits 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from testbed.bursts import presets
from workloads.transport.completion import transport_traits


def _insert_after(text: str, key: str, new: str, value: Any) -> str:
    """run.json text with the top-level field `new` written right after the top-level `key`
    (at the end if key is absent), every other byte kept: re-dumping the whole file would
    rewrite its numbers (1e-05 for pydantic's 0.00001)."""
    block = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    field = f'  "{new}": {block},\n'
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith(f'  "{key}": ')), None)
    if at is None:  # before the closing brace; the last field gets its comma
        lines[-2] = lines[-2].rstrip("\n") + ",\n"
        return "".join(lines[:-1]) + field.rstrip(",\n") + "\n" + lines[-1]
    return "".join(lines[: at + 1]) + field + "".join(lines[at + 1 :])


def migrate(run_dir: Path) -> bool:
    """Add the missing fields to run_dir/run.json; True if it changed. ValueError names a
    transport or preset the registry does not know."""
    path = Path(run_dir) / "run.json"
    text = path.read_text()
    info = json.loads(text)
    if "transport_traits" in info and info.get("preset_role"):
        return False
    transport = info.get("transport") or ""
    traits = transport_traits(transport).as_dict() if transport else {}
    try:
        role = presets.load(info.get("preset", "none")).role
    except presets.PresetError as e:
        raise ValueError(f"preset: {e}") from None
    want = {**info, "transport_traits": info.get("transport_traits", traits), "preset_role": role}
    if "transport_traits" not in info:
        text = _insert_after(text, "transport", "transport_traits", traits)
    if "preset_role" not in info:
        text = _insert_after(text, "preset", "preset_role", role)
    if json.loads(text) != want:
        raise ValueError("run.json is not laid out as the testbed writes it; not changed")
    path.write_text(text)
    return True


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    failed = 0
    for d in argv:
        try:
            changed = migrate(Path(d))
        except (OSError, ValueError) as e:
            print(f"{d}: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{d}: {'migrated' if changed else 'already has traits and preset role'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
