"""Numbers for people: one formatter per kind of quantity, "–" for a missing one."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd


def is_nan(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_num(x: object) -> str:
    """A magnitude for people: 12,270 / 576 / 57.1 / 5.73 / 0.0573, never 1.227e+04."""
    if is_nan(x):
        return "–"
    v = float(x)
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a >= 0.001:
        return f"{v:.3g}"
    return "<0.001" if v > 0 else ">-0.001"


def fmt_count(x: object) -> str:
    return "–" if is_nan(x) else f"{float(x):,.0f}"


def fmt_pct(x: object) -> str:
    """A fraction as a percentage: 0.1298 -> 13.0%; tiny but non-zero -> <0.1%."""
    if is_nan(x):
        return "–"
    v = 100.0 * float(x)
    if v != 0 and abs(v) < 0.05:
        return "<0.1%" if v > 0 else ">-0.1%"
    return f"{v:.1f}%"


def fmt_ratio(x: object) -> str:
    return "–" if is_nan(x) else f"{float(x):.2f}×"


def fmt_factor(x: object) -> str:
    """A factor as given: 1, 2.5, 8."""
    return "–" if is_nan(x) else f"{float(x):g}"


def fmt_acc(x: object) -> str:
    return "–" if is_nan(x) else f"{float(x):.3f}"


def fmt_pp(x: object) -> str:
    """A difference of fractions in percentage points: +1.2 pp."""
    return "–" if is_nan(x) else f"{100.0 * float(x):+.1f} pp"


def fmt_signed_pct(x: object) -> str:
    """A signed change as a percentage: +2.0%, -6.6%."""
    return "–" if is_nan(x) else f"{100.0 * float(x):+.1f}%"


def fmt_yes_no(x: object) -> str:
    return "–" if is_nan(x) else "yes" if bool(x) else "**no**"


def fmt_text(x: object) -> str:
    if is_nan(x):
        return ""
    if isinstance(x, bool):
        return "yes" if x else ""
    return str(x)


def fmt_quantile(rule_col: str) -> Callable[[object, pd.Series], str]:
    """A quantile cell that says when it is the maximum: "max 576 (n=59)"."""

    def f(x: object, row: pd.Series) -> str:
        rule = str(row.get(rule_col, ""))
        if is_nan(x):
            return "–"
        if rule.startswith("max"):
            return f"max {fmt_num(x)} ({rule.removeprefix('max ').strip('()')})"
        return fmt_num(x)

    return f


def fmt_multiple(x: object) -> str:
    """A multiple of the calm round: 1.5×, 4×, 2.01×."""
    return "–" if is_nan(x) else f"{float(x):.3g}×"
