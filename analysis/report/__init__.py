"""report.md for one or many runs: a one-screen headline, tables, figures, then validity.

The first screen is the title, ONE validity block summarising what is wrong with the runs
("23 of 23 runs UNFAITHFUL …, see Validity"), the headline table and a line of definitions.
Tables follow grouped by workload (comparisons by baseline), with units in their headers and
numbers formatted for people; the per-run details (every warning, every left-out run) come
at the end. Each table is also written as CSV under `tables/`: numbers in numeric columns
(NaN for missing), text in text columns.

Only runs with status ok are aggregated; a failed, interrupted or still-running run is
listed under "Runs not aggregated" with its status and reason.

Modules, in the order they build on each other: `formatting` (numbers for people), `columns`
(`Col`, `view`, `markdown`), `views` (each table's columns), `prose` (generated sentences),
`validity` and `sections` (markdown lines per section), `assembly` (`write_report`).
"""

from analysis.report.assembly import Report, write_report
from analysis.report.columns import Col, markdown, view
from analysis.report.formatting import (
    fmt_acc,
    fmt_count,
    fmt_factor,
    fmt_multiple,
    fmt_num,
    fmt_pct,
    fmt_pp,
    fmt_quantile,
    fmt_ratio,
    fmt_signed_pct,
    fmt_text,
    fmt_yes_no,
)
from analysis.report.prose import phase_sentences, timeout_sentences
from analysis.report.sections import headline, headline_rows
from analysis.report.validity import dilation_line, run_warnings

__all__ = [
    "Col",
    "Report",
    "dilation_line",
    "fmt_acc",
    "fmt_count",
    "fmt_factor",
    "fmt_multiple",
    "fmt_num",
    "fmt_pct",
    "fmt_pp",
    "fmt_quantile",
    "fmt_ratio",
    "fmt_signed_pct",
    "fmt_text",
    "fmt_yes_no",
    "headline",
    "headline_rows",
    "markdown",
    "phase_sentences",
    "run_warnings",
    "timeout_sentences",
    "view",
    "write_report",
]
