import math

import pandas as pd
import pytest

from analysis import schema


def _round_row(**over):
    row = dict(
        run_id="r",
        rank=0,
        round=1,
        iter=1,
        bucket=0,
        transport="dblp",
        stage="total",
        train_phase="stable",
        t_start_s=1.0,
        t_end_s=1.5,
        latency_ms=500.0,
        bytes=1000,
        pkts_expected=10,
        pkts_received=9,
        delivered_loss=0.1,
        epsilon=0.1,
        nacks=0,
        retx_pkts=0,
        cap_hit=False,
        bad_dgrams=0,
        cpu_wait_ms=0.0,
        loop_late_ms=0.0,
        is_warmup=False,
    )
    row.update(over)
    return row


def test_round_trip(tmp_path):
    path = schema.write_table(tmp_path, "rounds", [_round_row(), _round_row(rank=1)])
    assert path.name == "rounds.parquet"
    df = schema.read_table(tmp_path, "rounds")
    assert len(df) == 2 and df["latency_ms"].dtype == "float64"


def test_missing_table_reads_empty_typed(tmp_path):
    df = schema.read_table(tmp_path, "evals")
    assert df.empty and list(df.columns) == [c.name for c in schema.TABLES["evals"]]


@pytest.mark.parametrize(
    "over, culprit",
    [
        ({"delivered_loss": 1.5}, "rounds.delivered_loss"),
        ({"stage": "middle"}, "rounds.stage"),
        ({"loop_late_ms": -0.5}, "rounds.loop_late_ms"),
        ({"latency_ms": -1.0}, "rounds.latency_ms"),
    ],
)
def test_bad_values_name_the_column(over, culprit):
    df = schema.coerce("rounds", [_round_row(**over)])
    with pytest.raises(schema.SchemaError, match=culprit):
        schema.validate("rounds", df)


def test_a_registered_policy_name_is_a_valid_transport():
    # names come from the completion-policy registry, not a list in the schema
    schema.validate("rounds", schema.coerce("rounds", [_round_row(transport="firstquota")]))


def test_missing_column_is_named():
    row = _round_row()
    del row["nacks"]
    with pytest.raises(schema.SchemaError, match="nacks"):
        schema.coerce("rounds", [row])


def test_nan_allowed_in_float_but_not_int():
    ok = schema.coerce(
        "bursts",
        [
            dict(
                run_id="r",
                event_id=0,
                link="a-b",
                direction="a->b",
                kind="loss",
                magnitude=0.2,
                planned_start_s=0.0,
                planned_end_s=1.0,
                applied_start_s=math.nan,
                applied_end_s=math.nan,
                drops=0,
            )
        ],
    )
    schema.validate("bursts", ok)
    bad = pd.DataFrame({c.name: [None] for c in schema.TABLES["steps"]})
    with pytest.raises((schema.SchemaError, ValueError, TypeError)):
        schema.validate("steps", schema.coerce("steps", bad))


def test_run_info_round_trip_and_forbids_unknown(tmp_path):
    info = schema.RunInfo(run_id="x", status="ok", seed=3)
    schema.write_run_info(tmp_path, info)
    assert schema.read_run_info(tmp_path).seed == 3
    with pytest.raises(ValueError):
        schema.RunInfo(run_id="x", status="ok", sed=3)
    with pytest.raises(ValueError):
        schema.RunInfo(run_id="x", status="great")
