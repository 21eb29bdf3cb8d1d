"""The datagram MAC (integrity.py) and its layout (wire.py): what a forger without the key
can and cannot get past decode."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.transport import wire
from workloads.transport.integrity import Mac, new_mac_key

MTU, WORLD, ME, TOKEN = 1500, 3, 0, 0xABCDEF


def decode(key: bytes):
    return Mac(key).checked(wire.decoder(job_token=TOKEN, world=WORLD, me=ME, mtu=MTU, mac=True))


def data_dgram(mac: Mac | None, value: float = 1.0) -> bytes:
    per = wire.elems_per_packet(MTU, mac=mac is not None)
    flags = wire.FLAG_MAC if mac else 0
    h = wire.Header(wire.MAGIC, wire.VERSION, wire.DATA, wire.SCATTER, flags, TOKEN, 5, 1, ME,
                    0, per, 0, 0)  # fmt: skip
    payload = np.full(per, value, "<f4").tobytes()
    header = wire.HEADER.pack(*h)
    return header + (mac.tag(header, payload) if mac else b"") + payload


def test_the_mac_costs_16_bytes_of_payload_and_every_datagram_fits_the_mtu():
    assert wire.body_offset(True) == wire.HEADER_BYTES + wire.MAC_BYTES
    assert wire.payload_bytes(MTU, mac=True) == wire.payload_bytes(MTU) - wire.MAC_BYTES
    assert len(data_dgram(Mac(new_mac_key()))) <= MTU - wire.IP_UDP_BYTES


def test_a_datagram_with_the_right_mac_passes_and_any_change_fails():
    key = new_mac_key()
    check = decode(key)
    good = data_dgram(Mac(key))
    h = check(memoryview(good), len(good))
    assert not isinstance(h, str) and h.flags & wire.FLAG_MAC
    for at in (8, 20, wire.HEADER_BYTES + 3, len(good) - 1):  # token, src, MAC, payload
        bad = bytearray(good)
        bad[at] ^= 1
        assert check(memoryview(bad), len(bad)) in ("mac", "job_token", "sender")
    other = data_dgram(Mac(new_mac_key()))  # a forger with its own key
    assert check(memoryview(other), len(other)) == "mac"


def test_without_the_flag_or_with_it_when_off_a_datagram_is_rejected():
    key = new_mac_key()
    plain = data_dgram(None)
    assert decode(key)(memoryview(plain), len(plain)) in ("flags", "count", "length")
    tagged = data_dgram(Mac(key))
    off = wire.decoder(job_token=TOKEN, world=WORLD, me=ME, mtu=MTU)
    assert off(memoryview(tagged), len(tagged)) == "flags"


def test_sealed_control_datagrams_pass():
    mac = Mac(new_mac_key())
    nack = wire.control_datagram(wire.NACK, wire.SCATTER, TOKEN, 5, 1, 1, 0,
                                 wire.nack_payload([(0, 10)]), 1)  # fmt: skip
    stop = wire.control_datagram(wire.STOP, wire.SCATTER, TOKEN, 5, 1, 1, 0)
    check = Mac(new_mac_key()).checked(
        wire.decoder(job_token=TOKEN, world=WORLD, me=ME, mtu=MTU, mac=True)
    )
    for d in (nack, stop):
        sealed = mac.seal(d)
        assert len(sealed) == len(d) + wire.MAC_BYTES
        h = mac.checked(wire.decoder(job_token=TOKEN, world=WORLD, me=ME, mtu=MTU, mac=True))(
            memoryview(sealed), len(sealed)
        )
        assert not isinstance(h, str), h
        assert check(memoryview(sealed), len(sealed)) == "mac"


def test_a_key_of_the_wrong_size_is_refused():
    with pytest.raises(ValueError):
        Mac(b"short")
