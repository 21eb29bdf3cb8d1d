import math

import pandas as pd
import pytest

from analysis.windows import applied_windows, in_burst


def _bursts(*events, run_id="r"):
    rows = []
    for k, (start, end, *kind) in enumerate(events):
        rows.append(
            dict(
                run_id=run_id,
                event_id=k,
                link="a-b",
                direction="a->b",
                kind=kind[0] if kind else "loss",
                magnitude=0.1,
                planned_start_s=start,
                planned_end_s=end,
                applied_start_s=start,
                applied_end_s=end,
                drops=0,
            )
        )
    return pd.DataFrame(rows)


def _spans(*spans, run_id="r"):
    return pd.DataFrame(
        {
            "run_id": [run_id] * len(spans),
            "t_start_s": [s for s, _ in spans],
            "t_end_s": [e for _, e in spans],
        }
    )


@pytest.mark.parametrize(
    "span, expected",
    [
        ((8.0, 10.0), False),  # ends exactly when the burst starts
        ((20.0, 22.0), False),  # starts exactly when it ends
        ((8.0, 10.001), True),  # overlaps the start by 1 ms
        ((19.999, 22.0), True),  # overlaps the end by 1 ms
        ((12.0, 13.0), True),  # inside
        ((5.0, 25.0), True),  # covers the whole window
        ((15.0, 15.0), True),  # zero-length round strictly inside
        ((10.0, 10.0), False),  # zero-length round at the window start
        ((1.0, 2.0), False),  # far away
    ],
)
def test_edge_rule_is_positive_overlap(span, expected):
    assert bool(in_burst(_spans(span), _bursts((10.0, 20.0))).iloc[0]) is expected


def test_unapplied_events_do_not_count():
    b = _bursts((10.0, 20.0))
    b.loc[0, ["applied_start_s", "applied_end_s"]] = math.nan
    assert not in_burst(_spans((12.0, 13.0)), b).any()
    assert applied_windows(b).empty


def test_applied_but_never_reverted_stays_open():
    b = _bursts((10.0, 20.0))
    b.loc[0, "applied_end_s"] = math.nan
    assert in_burst(_spans((500.0, 501.0)), b).all()


def test_inert_kind_and_other_runs_do_not_count():
    assert not in_burst(_spans((12.0, 13.0)), _bursts((10.0, 20.0, "none"))).any()
    assert not in_burst(_spans((12.0, 13.0)), _bursts((10.0, 20.0), run_id="other")).any()


def test_directions_of_one_event_merge_into_one_window():
    b = pd.concat([_bursts((10.0, 20.0)), _bursts((10.5, 21.0))], ignore_index=True)
    b["event_id"] = 0
    w = applied_windows(b)
    assert len(w) == 1 and (w.start_s.iloc[0], w.end_s.iloc[0]) == (10.0, 21.0)
    assert in_burst(_spans((20.5, 22.0)), b).all()


def test_several_windows_and_index_preserved():
    spans = _spans((1.0, 2.0), (11.0, 12.0), (25.0, 26.0), (31.0, 32.0))
    spans.index = [7, 8, 9, 10]
    got = in_burst(spans, _bursts((10.0, 20.0), (30.0, 40.0)))
    assert list(got.index) == [7, 8, 9, 10]
    assert list(got) == [False, True, False, True]
