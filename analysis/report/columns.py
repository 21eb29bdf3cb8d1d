"""A table for people: which CSV columns it shows, under which headers, in which format."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from analysis.report.formatting import fmt_text, is_nan


@dataclass(frozen=True)
class Col:
    """One displayed column: the CSV column it shows, its header (with unit), its format.
    A CSV column with `_lo`/`_hi` siblings shows "x [lo, hi]" when the interval exists."""

    src: str
    head: str
    fmt: Callable[[object], str] = fmt_text
    row_fmt: Callable[[object, pd.Series], str] | None = None


def _cell(col: Col, row: pd.Series) -> str:
    x = row.get(col.src)
    if col.row_fmt is not None:
        return col.row_fmt(x, row)
    s = col.fmt(x)
    lo, hi = row.get(f"{col.src}_lo"), row.get(f"{col.src}_hi")
    if s != "–" and not is_nan(lo) and not is_nan(hi):
        s += f" [{col.fmt(lo)}, {col.fmt(hi)}]"
    return s


def view(df: pd.DataFrame, cols: Sequence[Col], drop_empty: bool = True) -> pd.DataFrame:
    """Display strings of df's columns under their headers; with drop_empty, a column that
    holds nothing in any row (e.g. time-to-accuracy of an all-reduce) is left out."""
    cols = [c for c in cols if c.src in df.columns]
    out = {c.head: [_cell(c, row) for _, row in df.iterrows()] for c in cols}
    d = pd.DataFrame(out, columns=[c.head for c in cols])
    if drop_empty and not d.empty:
        keep = [h for h in d.columns if not d[h].isin(["–", ""]).all() or h == cols[0].head]
        d = d[keep]
    return d


def markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table of display strings."""
    if df.empty:
        return "_(no rows)_\n"
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in df.values]
    return "\n".join([head, rule, *body]) + "\n"
