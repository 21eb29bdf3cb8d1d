"""Wire format: round trips, and a fuzz of mutated datagrams against an independent oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.transport import wire

MTU = 1500
WORLD = 4
ME = 1
TOKEN = 0xABCD1234_5678EF01
PER_PKT = wire.elems_per_packet(MTU)
MAX_RANGES = wire.ranges_per_nack(MTU)


def u(b: bytes, off: int, size: int) -> int:
    return int.from_bytes(b[off : off + size], "little")


def oracle_accepts(b: bytes) -> bool:
    """Which datagrams rank ME of a 4-rank job with TOKEN must accept, written out by hand
    from DESIGN §6 without the module's struct, so the two can disagree."""
    if not 40 <= len(b) <= MTU - 28:
        return False
    if b[:4] != b"DBLP" or b[4] != 2:
        return False
    kind, stage, flags = b[5], b[6], b[7]
    if kind not in (1, 2, 3, 4) or stage not in (0, 1) or u(b, 8, 8) != TOKEN:
        return False
    src, shard, off, count = u(b, 20, 2), u(b, 22, 2), u(b, 24, 4), u(b, 28, 4)
    if src >= WORLD or src == ME or shard >= WORLD:
        return False
    if kind == 1:
        owner = ME if stage == 0 else src
        return (
            flags & ~0x03 == 0
            and shard == owner
            and 1 <= count <= PER_PKT
            and len(b) == 40 + 4 * count
            and off % PER_PKT == 0
        )
    if kind == 3:  # PROBE: from the data's sender, a bare header
        owner = ME if stage == 0 else src
        return (
            flags == 0
            and shard == owner
            and count == 0
            and len(b) == 40
            and off == 0
            and (u(b, 36, 4) == 0)
        )
    owner = src if stage == 0 else ME
    if kind == 4:  # STOP: from the data's receiver, a bare header
        return (
            flags == 0
            and shard == owner
            and count == 0
            and len(b) == 40
            and off == 0
            and (u(b, 36, 4) == 0)
        )
    return (
        flags == 0
        and shard == owner
        and 1 <= count <= MAX_RANGES
        and len(b) == 40 + 8 * count
        and off == 0
        and u(b, 36, 4) == 0
    )


def decode(b: bytes) -> wire.Header | str:
    return wire.decode(b, len(b), job_token=TOKEN, world=WORLD, me=ME, mtu=MTU)


@st.composite
def valid_datagrams(draw) -> bytes:
    kind = draw(st.sampled_from(wire.KINDS))
    stage = draw(st.sampled_from((wire.SCATTER, wire.GATHER)))
    src = draw(st.sampled_from([r for r in range(WORLD) if r != ME]))
    rnd = draw(st.integers(0, 2**32 - 1))
    eps_id = draw(st.integers(0, 2**32 - 1))
    if kind == wire.DATA:
        count = draw(st.integers(1, PER_PKT))
        off = PER_PKT * draw(st.integers(0, 1000))
        flags = draw(st.sampled_from((0, wire.FLAG_LAST, wire.FLAG_REPAIR)))
        shard = ME if stage == wire.SCATTER else src
        payload = draw(st.binary(min_size=4 * count, max_size=4 * count))
        timeout = draw(st.integers(0, 2**32 - 1))
    elif kind in (wire.PROBE, wire.STOP):
        count, off, flags, timeout, payload = 0, 0, 0, 0, b""
        shard = (
            (ME if stage == wire.SCATTER else src)
            if kind == wire.PROBE
            else (src if stage == wire.SCATTER else ME)
        )
    else:
        ranges = draw(
            st.lists(
                st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
                min_size=1,
                max_size=MAX_RANGES,
            )
        )
        count, off, flags, timeout = len(ranges), 0, 0, 0
        shard = src if stage == wire.SCATTER else ME
        payload = wire.nack_payload(ranges)
    h = wire.Header(
        wire.MAGIC,
        wire.VERSION,
        kind,
        stage,
        flags,
        TOKEN,
        rnd,
        src,
        shard,
        off,
        count,
        eps_id,
        timeout,
    )
    return wire.encode(h, payload)


def test_header_is_40_bytes_and_payload_fits_the_mtu():
    assert wire.HEADER_BYTES == 40
    assert wire.payload_bytes(1500) == 1500 - 28 - 40
    assert PER_PKT == 358 and 40 + 4 * PER_PKT <= 1500 - 28
    assert (
        wire.encode(wire.Header(wire.MAGIC, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), b"")[:4] == b"DBLP"
    )


@given(valid_datagrams())
@settings(max_examples=300, deadline=None)
def test_round_trip(b):
    h = decode(b)
    assert isinstance(h, wire.Header), h
    assert wire.encode(h, b[40:]) == b
    assert oracle_accepts(b)
    if h.kind in (wire.PROBE, wire.STOP):
        assert len(b) == 40
    elif h.kind == wire.NACK:
        assert wire.nack_payload(wire.nack_ranges(b, h.count)) == b[40:]
    else:
        vals = np.frombuffer(b, "<f4", h.count, 40)
        assert vals.tobytes() == b[40:]


@st.composite
def mutated(draw) -> bytes:
    b = bytearray(draw(valid_datagrams()))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("flip", "set", "truncate", "extend", "header_byte")))
        if op == "flip" and b:
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and b:
            i = draw(st.integers(0, min(len(b), 40) - 1))
            b[i] = draw(st.integers(0, 255))
        elif op == "header_byte":
            i = draw(st.integers(0, 35))
            if i < len(b):
                b[i] = draw(st.sampled_from((0, 1, 2, 3, 4, 255)))
        elif op == "truncate":
            del b[draw(st.integers(0, len(b))) :]
        else:
            b += draw(st.binary(min_size=1, max_size=16))
    return bytes(b)


@given(mutated())
@settings(max_examples=1500, deadline=None)
def test_fuzz_accepts_exactly_what_the_oracle_accepts(b):
    res = decode(b)  # must never raise
    assert isinstance(res, wire.Header | str)
    assert isinstance(res, wire.Header) == oracle_accepts(b), (res, b[:40].hex())
    if isinstance(res, str):
        assert res  # every rejection names its reason


@given(st.binary(max_size=1600))
@settings(max_examples=500, deadline=None)
def test_fuzz_random_bytes(b):
    res = decode(b)
    assert isinstance(res, wire.Header) == oracle_accepts(b)


def test_rejections_name_the_check():
    good = wire.Header(
        wire.MAGIC, wire.VERSION, wire.DATA, wire.GATHER, 0, TOKEN, 7, 2, 2, 0, 2, 0, 0
    )
    payload = np.ones(2, "<f4").tobytes()
    assert isinstance(decode(wire.encode(good, payload)), wire.Header)
    cases = {
        "short": wire.encode(good, payload)[:20],
        "magic": wire.encode(good._replace(magic=1), payload),
        "version": wire.encode(good._replace(version=9), payload),
        "kind": wire.encode(good._replace(kind=7), payload),
        "stage": wire.encode(good._replace(stage=5), payload),
        "job_token": wire.encode(good._replace(job_token=1), payload),
        "sender": wire.encode(good._replace(src=ME, shard=ME), payload),
        "shard": wire.encode(good._replace(shard=3), payload),
        "length": wire.encode(good, payload + b"\0\0\0\0"),
        "count": wire.encode(good._replace(count=0), b""),
        "offset": wire.encode(good._replace(offset=5), payload),
        "flags": wire.encode(good._replace(flags=0x80), payload),
        "oversize": wire.encode(good, bytes(1500)),
    }
    for reason, b in cases.items():
        assert decode(b) == reason, reason
    far = wire.encode(good._replace(src=WORLD, shard=WORLD), payload)
    assert decode(far) == "sender"
