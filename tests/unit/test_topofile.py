"""`--topo-file` TOML: a valid file builds; every kind of bad entry is named in the error."""

import pytest

from topologies import equal_cost_paths, load_topology_file, routes
from topologies.topofile import TopologyFileError

GOOD = """
name = "triangle"
[defaults]
mbps = 50
queue = 20
[[nodes]]
name = "r1"
kind = "router"
tier = "edge"
[[nodes]]
name = "r2"
kind = "router"
tier = "edge"
[[nodes]]
name = "r3"
kind = "router"
tier = "core"
[[nodes]]
name = "h1"
kind = "host"
[[nodes]]
name = "h2"
kind = "host"
ip = "10.9.9.9"
[[links]]
a = "h1"
b = "r1"
[[links]]
a = "h2"
b = "r2"
mbps = 10
[[links]]
a = "r1"
b = "r3"
delay_ms = 1.5
[[links]]
a = "r2"
b = "r3"
"""


def _write(tmp_path, text):
    p = tmp_path / "t.toml"
    p.write_text(text)
    return p


def test_good_file(tmp_path):
    t = load_topology_file(_write(tmp_path, GOOD))
    assert t.name == "triangle"
    assert [h.name for h in t.hosts] == ["h1", "h2"]
    assert t.host_ip("h1") == "10.0.0.2" and t.host_ip("h2") == "10.9.9.9"
    assert t.link("h2", "r2").mbps == 10.0 and t.link("r1", "r3").queue == 20
    assert t.link("r1", "r3").delay_ms == 1.5
    assert equal_cost_paths(t, routes(t), "h1", "h2") == 1


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ('tier = "core"', 'tier = "moon"', r"nodes\[2\] \('r3'\): tier"),
        ('kind = "host"\n[[nodes]]\nname = "h2"', 'kind = "hots"\n[[nodes]]\nname = "h2"',
         r"nodes\[3\] \('h1'\): kind"),
        ('b = "r3"\ndelay_ms', 'b = "r9"\ndelay_ms', r"links\[2\] \(r1-r9\): unknown node 'r9'"),
        ("mbps = 10\n", "mbps = -1\n", r"link h2-r2: mbps"),
        ("mbps = 10\n", 'mbps = "fast"\n', r"links\[1\] \(h2-r2\).mbps: expected"),
        ('ip = "10.9.9.9"', 'ip = "10.9.9.1"', r"host 'h2'.*reserved"),
        ('ip = "10.9.9.9"', 'ip = "10.9.9.9"\ncolour = 1', r"nodes\[4\] \('h2'\): unknown key"),
        ('name = "r2"', 'name = "r1"', r"nodes\[1\] \('r1'\): duplicate"),
        ("[defaults]\nmbps = 50\n", "[defaults]\n", r"links\[0\]: missing 'mbps'"),
    ],
)  # fmt: skip
def test_bad_entries_are_named(tmp_path, old, new, match):
    assert old in GOOD
    with pytest.raises(TopologyFileError, match=match):
        load_topology_file(_write(tmp_path, GOOD.replace(old, new, 1)))


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(TopologyFileError, match="cannot read"):
        load_topology_file(tmp_path / "missing.toml")
    with pytest.raises(TopologyFileError, match="not valid TOML"):
        load_topology_file(_write(tmp_path, "[[nodes]\n"))
    with pytest.raises(TopologyFileError, match=r"\[\[links\]\]"):
        load_topology_file(_write(tmp_path, '[[nodes]]\nname = "h1"\nkind = "host"\n'))
