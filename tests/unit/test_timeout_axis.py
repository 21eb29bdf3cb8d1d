"""optireduce's timeout as an axis: the per-event ratio against the baseline's hard timeout,
read from run.json's calibration, with the published 5.88x located on it."""

import json
import math

import pytest
from synthetic_runs import write_run

from analysis import figures, tables
from analysis.load import load_runs
from analysis.report import timeout_sentences, write_report

P50_MS = 20.0
DBLP_HIT_MS = 25.0
TIMEOUTS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
#: five one-round events per run, the same rounds under every label (same seed)
EVENTS = ((10, 11), (20, 21), (30, 31), (40, 41), (50, 51))


def calibrate(run_dir, *, mode: str, cap_x: float, p50_ms: float = P50_MS) -> None:
    """Give a synthetic run the transport_params a calibrated optireduce writes."""
    path = run_dir / "run.json"
    info = json.loads(path.read_text())
    info["transport_params"] = {
        "config": {"optireduce_mode": mode},
        "p50_ms": p50_ms,
        "t_max_ms": cap_x * p50_ms,
    }
    path.write_text(json.dumps(info))


def write_timeout_sweep(root, seeds=(0, 1, 2), adaptive_hit_x=2.0, preset="microburst"):
    """dblp, optireduce adaptive and optireduce fixed at each of TIMEOUTS, on the same seeds:
    a fixed timeout X holds a hit round for X x the calm p50 (20 ms), dblp for 25 ms, so the
    per-event ratio is 0.8 X (4.8x at 6, 6.4x at 8: 5.88x at 7.35)."""
    dirs = []
    common = dict(workload="allreduce", preset=preset, base_ms=P50_MS, burst_rounds=EVENTS)
    for seed in seeds:
        dirs.append(
            write_run(root, f"d-{preset}-{seed}", transport="dblp", seed=seed,
                      burst_ms=DBLP_HIT_MS, **common)
        )  # fmt: skip
        d = write_run(root, f"oa-{preset}-{seed}", transport="optireduce", seed=seed,
                      burst_ms=adaptive_hit_x * P50_MS, **common)  # fmt: skip
        calibrate(d, mode="adaptive", cap_x=4.0)
        dirs.append(d)
        for x in TIMEOUTS:
            d = write_run(
                root, f"o{x:g}-{preset}-{seed}", transport="optireduce", seed=seed,
                burst_ms=x * P50_MS, **common,
                spec={"label": f"optireduce-t{x:g}x", "optireduce_mode": "fixed",
                      "t_max_p50": x},
            )  # fmt: skip
            calibrate(d, mode="fixed", cap_x=x)
            dirs.append(d)
    return dirs


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeouts")
    return write_timeout_sweep(root / "runs")


@pytest.fixture(scope="module")
def built(sweep):
    return tables.build_tables(load_runs(sweep))


def test_run_params_reads_the_timeout_as_played(sweep):
    cal = tables.run_params(load_runs(sweep)).set_index("run_id")
    assert cal.loc["o1.5-microburst-0", "cap_x"] == pytest.approx(1.5)
    assert cal.loc["o1.5-microburst-0", "mode"] == "fixed"
    assert cal.loc["oa-microburst-0", "mode"] == "adaptive"
    assert cal.loc["oa-microburst-0", "p50_ms"] == pytest.approx(P50_MS)
    assert (
        math.isnan(cal.loc["d-microburst-0", "p50_ms"]) and cal.loc["d-microburst-0", "mode"] == ""
    )


def test_run_params_under_dilation_is_in_the_tables_time(tmp_path):
    d = write_run(tmp_path, "o", transport="optireduce")
    calibrate(d, mode="fixed", cap_x=3.0, p50_ms=4 * P50_MS)
    info = json.loads((d / "run.json").read_text())
    info["dilation"] = 4.0
    (d / "run.json").write_text(json.dumps(info))
    row = tables.run_params(load_runs([d])).iloc[0]
    assert row.p50_ms == pytest.approx(P50_MS) and row.cap_x == pytest.approx(3.0)


def test_a_row_per_optireduce_timeout_with_the_per_event_ratio(built):
    axis = built["timeout_axis"]
    fixed = axis[axis["mode"] == "fixed"]
    assert list(fixed["timeout_x"]) == pytest.approx(list(TIMEOUTS))
    assert list(fixed["hit_x"]) == pytest.approx(list(TIMEOUTS))  # the cap binds
    assert list(fixed["event_ratio_max"]) == pytest.approx([0.8 * x for x in TIMEOUTS])
    assert (fixed["events"] == 3 * len(EVENTS)).all() and (fixed["seeds"] == 3).all()
    (adaptive,) = axis[axis["mode"] == "adaptive"].itertuples(index=False)
    assert adaptive.baseline == "optireduce" and adaptive.cap_x == pytest.approx(4.0)
    assert adaptive.timeout_x == pytest.approx(2.0) == adaptive.hit_x  # effective timeout
    assert adaptive.event_ratio_max == pytest.approx(2.0 * P50_MS / DBLP_HIT_MS)


def test_where_the_published_max_is_reached(built):
    (r,) = tables.timeout_reaching(built["timeout_axis"], 5.88).itertuples(index=False)
    assert r.reached_x == pytest.approx(6 + (5.88 - 4.8) / (6.4 - 4.8) * 2)
    assert (r.swept_lo, r.swept_hi, r.best_x) == (1.5, 8.0, 8.0)
    assert "reaches the published 5.88× at a fixed timeout of about 7.35×" in " ".join(
        timeout_sentences(built["timeout_axis"])
    )
    below = tables.timeout_reaching(built["timeout_axis"], 7.0).iloc[0]
    assert math.isnan(below.reached_x) and below.best == pytest.approx(6.4)
    halved = built["timeout_axis"].assign(event_ratio_max=lambda d: d["event_ratio_max"] / 2)
    (said,) = timeout_sentences(halved)
    assert "does not reach the published 5.88× within the swept timeouts (1.5×–8×" in said


def test_one_optireduce_label_is_no_axis(tmp_path):
    dirs = [
        write_run(tmp_path, "d", transport="dblp", burst_ms=60.0),
        write_run(tmp_path, "o", transport="optireduce", burst_ms=300.0),
    ]
    runs = load_runs(dirs)
    t = tables.build_tables(runs)
    assert t["timeout_axis"].empty and not t["events"].empty
    assert "timeout_axis" not in figures.make_figures(runs, t, tmp_path / "fig")


def test_report_section_and_figure(sweep, tmp_path):
    rep = write_report(sweep, tmp_path / "rep")
    text = rep.path.read_text()
    section = text.split("## A bounded-time baseline's timeout as an axis")[1].split("\n## ")[0]
    assert (
        "adaptive (≈2× effective)" in section
        and "| microburst | dblp | optireduce-t8x |" in section
    )
    assert "about 7.35× the calm p50" in section
    assert "![timeout_axis](figures/timeout_axis.png)" in section
    assert rep.figures["timeout_axis"].stat().st_size > 5000
