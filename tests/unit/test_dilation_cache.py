"""`--dilation auto`'s cache without root: what names a shape, what a calibration leaves
behind, and how an unfaithful run pushes the next calibration up."""

import json

from testbed.run import dilation_cache
from testbed.run.dilation import CALIBRATION_DILATIONS
from testbed.spec import RunSpec


def test_a_shape_is_the_network_the_senders_and_the_bursts_cpu_not_the_seed_or_magnitudes():
    key = dilation_cache.shape_key
    base = RunSpec(burst="heavy")
    # sham is heavy's control: the same CPU cost; paper-60 ... paper-90 differ in loss alone
    assert key(base) == key(RunSpec(seed=7, burst="sham", lr=0.5, steps=30, label="x"))
    assert key(RunSpec(burst="paper-60")) == key(RunSpec(burst="paper-90"))
    for other in (RunSpec(workers=2), RunSpec(bw=25.0), RunSpec(k=6), RunSpec(mtu=9000),
                  RunSpec(transport="tcp"), RunSpec(workload="allreduce"), RunSpec(),
                  RunSpec(burst="moderate")):  # fmt: skip
        assert key(other) != key(base)


def test_the_cache_path_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(dilation_cache.CACHE_ENV, str(tmp_path / "c.json"))
    assert dilation_cache.cache_path() == tmp_path / "c.json"
    monkeypatch.delenv(dilation_cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert dilation_cache.cache_path() == tmp_path / "dblp-testbed" / "dilation.json"


def test_a_calibration_is_remembered_per_shape(tmp_path):
    path = tmp_path / "d.json"
    spec = RunSpec(workers=2)
    assert dilation_cache.lookup(spec, path) is None
    ref = {"dilation": 2.0, "calm_ratio": 1.07, "tolerance": 0.1, "source": "3 calibrations"}
    dilation_cache.remember(spec, 2.0, "auto: smallest faithful", path, reference=ref)
    e = dilation_cache.lookup(RunSpec(workers=2, seed=3), path)
    assert (e.dilation, e.floor, e.why) == (2.0, 0.0, "auto: smallest faithful")
    assert e.reference(0) == ref and e.reference(3) is None  # per seed: the seed sets the paths
    ref3 = ref | {"calm_ratio": 1.15}
    dilation_cache.add_reference(RunSpec(workers=2, seed=3), ref3, path)
    e = dilation_cache.lookup(spec, path)
    assert (e.reference(0), e.reference(3), e.dilation) == (ref, ref3, 2.0)
    assert dilation_cache.lookup(RunSpec(workers=4), path) is None
    dilation_cache.remember(RunSpec(workers=4), 1.0, "x", path)
    stored = json.loads(path.read_text())
    assert len(stored) == 2 and all(v["shape"]["workers"] in ("2", "4") for v in stored.values())


def test_an_unfaithful_run_raises_the_floor_and_the_next_ladder_starts_above(tmp_path):
    path = tmp_path / "d.json"
    spec = RunSpec()
    dilation_cache.remember(spec, 1.0, "calibrated", path, reference={"calm_ratio": 1.1})
    e = dilation_cache.distrust(spec, 1.0, "calm rounds 1.7x their bound", path)
    assert e.dilation is None and e.floor == 1.0 and "1.7x" in e.why
    assert e.references == {}  # made where runs now fail: the recalibration measures anew
    assert dilation_cache.lookup(spec, path).dilations() == (2.0, 4.0, 8.0)
    dilation_cache.remember(spec, 2.0, "recalibrated", path)
    assert dilation_cache.lookup(spec, path).floor == 1.0  # remembered, never lowered
    top = CALIBRATION_DILATIONS[-1]
    assert dilation_cache.distrust(spec, top, "still late", path).dilations() == (2 * top,)


def test_a_damaged_cache_is_an_empty_one(tmp_path):
    path = tmp_path / "d.json"
    path.write_text("{not json")
    assert dilation_cache.lookup(RunSpec(), path) is None
    path.write_text(json.dumps({dilation_cache.shape_key(RunSpec()): {"dilation": 2.0}}))
    assert dilation_cache.lookup(RunSpec(), path) is None  # an entry of another format
    dilation_cache.remember(RunSpec(), 4.0, "ok", path)
    assert dilation_cache.lookup(RunSpec(), path).dilation == 4.0
