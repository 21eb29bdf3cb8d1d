"""Preset parsing: built-ins load, bad values name their field, the hash tracks content only."""

import pytest

from testbed.bursts import presets
from testbed.bursts.presets import PresetError, parse_preset

GOOD = """
name = "mine"
[[streams]]
kind = "loss"
magnitude = 0.2
duration_s = 0.1
arrival = { min_gap_s = 0.5, mean_extra_gap_s = 1.0 }
targets = [{ role = "worker_downlink", worker = 0 }]
"""


def test_builtins_load_and_are_distinct():
    names = presets.builtin_names()
    assert set(names) >= {"none", "light", "moderate", "heavy", "sham"}
    hashes = {presets.load(n).hash for n in names}
    assert len(hashes) == len(names)
    assert presets.load("none").streams == ()


def test_heavy_matches_the_measured_recipe():
    loss = presets.load("heavy").streams[0]
    assert (loss.kind, loss.magnitude, loss.duration_s) == ("loss", 0.5, 0.1)
    assert (loss.arrival.min_gap_s, loss.arrival.mean_extra_gap_s) == (0.1, 0.4)


def test_sham_has_heavys_windows():
    heavy, sham = presets.load("heavy"), presets.load("sham")
    assert [s.arrival for s in heavy.streams] == [s.arrival for s in sham.streams]
    assert [s.duration_s for s in heavy.streams] == [s.duration_s for s in sham.streams]
    assert sham.streams[1].sham and sham.streams[0].magnitude == 0


@pytest.mark.parametrize("name", presets.builtin_names())
def test_a_control_keeps_the_windows_and_drops_the_network_effect(name):
    """Preset.control, what `--dilation auto` calibrates under: the same streams (so the same
    seeded windows), none of which changes what a worker's packets meet; written as TOML, it
    reads back as itself."""
    preset = presets.load(name)
    control = preset.control()
    assert control.role == "control" and len(control.streams) == len(preset.streams)
    for s, c in zip(preset.streams, control.streams, strict=True):
        assert (c.arrival, c.duration_s, c.rounds, c.targets) == (
            s.arrival,
            s.duration_s,
            s.rounds,
            s.targets,
        )
        assert c.sham if s.kind == "incast" else c.magnitude == presets.NEUTRAL[s.kind]
    assert parse_preset(presets.dump_preset(control)) == control


def test_the_control_of_heavy_is_sham():
    assert presets.load("heavy").control().hash == presets.load("sham").hash


def test_hash_ignores_name_and_prose_but_not_content():
    a = parse_preset(GOOD)
    b = parse_preset(GOOD.replace('"mine"', '"other"\ndescription = "x"'))
    c = parse_preset(GOOD.replace("0.2", "0.3"))
    assert a.hash == b.hash != c.hash


def test_preset_is_frozen():
    p = parse_preset(GOOD)
    with pytest.raises(Exception, match="frozen"):
        p.name = "x"


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("magnitude = 0.2", "magnitude = 1.5", "streams.0"),
        ("magnitude = 0.2", "magnitude = -1", "streams.0.magnitude"),
        ("duration_s = 0.1", "duration_s = 0", "streams.0.duration_s"),
        ("min_gap_s = 0.5", "min_gap_s = -2", "streams.0.arrival.min_gap_s"),
        ('kind = "loss"', 'kind = "jitter"', "streams.0.kind"),
        ("worker = 0", "pod = 0", "streams.0.targets.0"),
        ('role = "worker_downlink"', 'role = "everything"', "streams.0.targets.0.role"),
        ("duration_s = 0.1", "duration_s = 0.1\nbogus = 1", "streams.0.bogus"),
        ('kind = "loss"', 'kind = "loss"\nmode = "gilbert"', "streams.0"),
    ],
)
def test_bad_values_name_the_field(old, new, field):
    assert old in GOOD
    with pytest.raises(PresetError) as exc:
        parse_preset(GOOD.replace(old, new), "mine.toml")
    assert f"mine.toml: {field}" in str(exc.value)


def test_incast_must_target_a_worker_downlink():
    text = GOOD.replace('kind = "loss"', 'kind = "incast"').replace(
        '{ role = "worker_downlink", worker = 0 }',
        '{ role = "tier_uplinks", tier = "edge" }',
    )
    with pytest.raises(PresetError, match="streams.0: .*worker_downlink"):
        parse_preset(text)


def test_not_toml_and_unknown_name():
    with pytest.raises(PresetError, match="not valid TOML"):
        parse_preset("name = ")
    with pytest.raises(PresetError, match="unknown preset 'nope'.*heavy"):
        presets.load("nope")


def test_user_file(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(GOOD)
    assert presets.load(f).name == "mine"
    with pytest.raises(PresetError, match="does not exist"):
        presets.load(tmp_path / "missing.toml")
