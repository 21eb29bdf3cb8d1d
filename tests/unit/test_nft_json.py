"""nft's JSON (`nft -j`, nftables 1.0.6): named counters and the handle of an echoed rule.

The samples were captured from nftables 1.0.6 with the table the nft loss mechanism builds.
"""

import pytest

from testbed.bursts.impairments.nft import counter_packets, echoed_handle, loss_expr

#: `nft -j list counters table ip dblp_loss`
COUNTERS = (
    '{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", '
    '"json_schema_version": 1}}, {"counter": {"family": "ip", "name": "d0", "table": '
    '"dblp_loss", "handle": 2, "packets": 12, "bytes": 1008}}, {"counter": {"family": "ip", '
    '"name": "d1", "table": "dblp_loss", "handle": 3, "packets": 0, "bytes": 0}}]}'
)
#: `nft -j --echo --handle add rule ip dblp_loss output_loss oifname "a0" numgen random
#: mod 1000000 < 500000 counter name "d0" drop`
ECHO = (
    '{"nftables": [{"add": {"rule": {"family": "ip", "table": "dblp_loss", "chain": '
    '"output_loss", "handle": 4, "expr": [{"match": {"op": "==", "left": {"meta": {"key": '
    '"oifname"}}, "right": "a0"}}, {"match": {"op": "<", "left": {"numgen": {"mode": '
    '"random", "mod": 1000000, "offset": 0}}, "right": 500000}}, {"counter": "d0"}, '
    '{"drop": null}]}}}]}'
)


def test_counter_packets_by_name():
    assert counter_packets(COUNTERS) == {"d0": 12, "d1": 0}
    assert counter_packets('{"nftables": [{"metainfo": {"version": "1.0.6"}}]}') == {}


def test_echoed_rule_handle():
    assert echoed_handle(ECHO) == "4"
    # the echoed rule is the one the mechanism writes
    assert loss_expr("a0", "d0", 0.5, "random") == [
        "oifname", '"a0"', "numgen", "random", "mod", "1000000", "<", "500000",
        "counter", "name", '"d0"', "drop",
    ]  # fmt: skip


def test_text_listing_is_refused_not_misread():
    text = "table ip dblp_loss {\n\tcounter d0 {\n\t\tpackets 12 bytes 1008\n\t}\n}"
    with pytest.raises(ValueError, match="no nftables JSON"):
        counter_packets(text)
    with pytest.raises(ValueError, match="no nftables JSON"):
        echoed_handle("add rule ip dblp_loss output_loss ... drop # handle 5")
    with pytest.raises(ValueError, match="no rule handle"):
        echoed_handle('{"nftables": [{"metainfo": {"version": "1.0.6"}}]}')
