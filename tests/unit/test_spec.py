import pytest

from testbed.spec import RunSpec, SpecError, build_spec


def test_defaults_are_the_main_job():
    s = RunSpec()
    assert (s.topo, s.k, s.bw, s.workers, s.transport, s.model, s.seed) == (
        "fattree",
        4,
        100.0,
        4,
        "dblp",
        "cnn",
        0,
    )
    assert s.pace == pytest.approx(95.0)


@pytest.mark.parametrize(
    "flags, field",
    [
        ({"k": 3}, "k"),
        ({"bw": -1}, "bw"),
        ({"transport": "quic"}, "transport"),
        ({"workers": 0}, "workers"),
        ({"queue": 1}, "queue"),
        ({"bogus": 1}, "bogus"),
        ({"epsilon": 0.3}, "epsilon"),  # ignored with the phase controller on: refuse it
    ],
)
def test_bad_flags_name_the_field(flags, field):
    with pytest.raises(SpecError) as e:
        build_spec(**flags)
    assert e.value.field == field


def test_config_file_and_flags_merge(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('[run]\ntransport = "tcp"\nbw = 50.0\nseed = 7\n')
    s = build_spec(cfg, seed=9, transport=None)
    assert (s.transport, s.bw, s.seed) == ("tcp", 50.0, 9)


def test_bad_config_names_the_file(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("transport = \n")
    with pytest.raises(SpecError, match="config"):
        build_spec(cfg)
    with pytest.raises(SpecError, match="does not exist"):
        build_spec(tmp_path / "missing.toml")


def test_hash_ignores_presentation_but_not_measurement(tmp_path):
    a = RunSpec()
    assert a.spec_hash() == RunSpec(out=tmp_path).spec_hash()
    assert a.spec_hash() != RunSpec(seed=1).spec_hash()
    assert a.spec_hash() != RunSpec(burst="heavy").spec_hash()
    assert len(a.spec_hash()) == 12


def test_label_names_the_variant_without_changing_the_hash():
    assert RunSpec(label="mine").spec_hash() == RunSpec().spec_hash()
    assert build_spec(phase="off", epsilon=0.3).epsilon == 0.3


def test_hash_of_the_default_spec_is_the_one_sweeps_were_made_with():
    # fields added later (base_port, drop, ...) stay out of the hash at their defaults
    assert RunSpec().spec_hash() == "6722478804d5"
    assert RunSpec(base_port=50000).spec_hash() != RunSpec().spec_hash()
    assert RunSpec(drop=0.1).spec_hash() != RunSpec().spec_hash()


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("field", ["lr", "bw", "bucket_cap_mb", "interval_ms", "t_max_ms"])
def test_every_float_is_finite(field, value):
    with pytest.raises(SpecError) as e:
        build_spec(**{field: value})
    assert e.value.field == field


def test_the_worker_gets_its_fields_with_the_pace_resolved():
    w = RunSpec(bw=40.0, transport="tcp").worker_spec(dilation=1.0)
    assert (w.pace_mbps, w.transport, w.dilation) == (pytest.approx(38.0), "tcp", 1.0)
    assert RunSpec(pace_mbps=10.0).worker_spec(dilation=2.0).pace_mbps == 10.0
    assert "bw" not in type(w).model_fields


def test_the_network_size_is_bounded_before_it_is_built():
    assert RunSpec(k=14).planned_nodes() == len(RunSpec(k=14).topology().nodes)
    assert RunSpec(topo="leafspine").planned_nodes() == len(
        RunSpec(topo="leafspine").topology().nodes
    )
    with pytest.raises(SpecError, match="limit"):
        build_spec(k=16)


def test_topology_choices_and_their_parameters_come_from_the_registry():
    from testbed.spec import _NODE_COUNT, Topo
    from topologies import BUILDERS

    assert Topo.__args__ == tuple(BUILDERS)
    assert set(_NODE_COUNT) == set(BUILDERS), "every registered topology needs its node count"
    for name in BUILDERS:
        spec = RunSpec(topo=name)
        assert spec.planned_nodes() == len(spec.topology().nodes), name
