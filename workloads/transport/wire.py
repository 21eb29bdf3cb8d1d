"""The datagram format: a fixed 36-byte little-endian header, then the payload.

DATA carries float32 elements of one shard (packet-aligned offset, in elements); NACK carries
(offset, count) uint32 pairs naming the missing element ranges of one shard. A payload never
exceeds MTU - 28 (IPv4 + UDP) - 36 bytes, so with IP_PMTUDISC_DO nothing is fragmented.

Every received datagram goes through `decode`, which returns a Header or the reason it was
rejected; it never raises, whatever the bytes.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

MAGIC = 0x504C4244  # b"DBLP" read little-endian
VERSION = 1
HEADER = struct.Struct("<IBBBBIIHHIIII")
HEADER_BYTES = HEADER.size  # 36
IP_UDP_BYTES = 28

DATA = 1
NACK = 2
KINDS = (DATA, NACK)

SCATTER = 0
GATHER = 1

FLAG_LAST = 0x01  # the final packet of a sender's first transmission of this stage
FLAG_REPAIR = 0x02  # a retransmission answering a NACK
DATA_FLAGS = FLAG_LAST | FLAG_REPAIR

ELEM_BYTES = 4
RANGE = struct.Struct("<II")


class Header(NamedTuple):
    magic: int
    version: int
    kind: int
    stage: int
    flags: int
    job_token: int
    round: int
    src: int
    shard: int
    offset: int
    count: int
    eps_id: int
    timeout_us: int


def payload_bytes(mtu: int) -> int:
    """Largest payload that fits one unfragmented IPv4 datagram."""
    return mtu - IP_UDP_BYTES - HEADER_BYTES


def elems_per_packet(mtu: int) -> int:
    return payload_bytes(mtu) // ELEM_BYTES


def ranges_per_nack(mtu: int) -> int:
    return payload_bytes(mtu) // RANGE.size


def pack_header_into(
    buf: bytearray | memoryview,
    kind: int,
    stage: int,
    flags: int,
    job_token: int,
    rnd: int,
    src: int,
    shard: int,
    offset: int,
    count: int,
    eps_id: int,
    timeout_us: int,
) -> None:
    HEADER.pack_into(
        buf,
        0,
        MAGIC,
        VERSION,
        kind,
        stage,
        flags,
        job_token,
        rnd & 0xFFFFFFFF,
        src,
        shard,
        offset,
        count,
        eps_id & 0xFFFFFFFF,
        min(timeout_us, 0xFFFFFFFF),
    )


def encode(header: Header, payload: bytes) -> bytes:
    """A whole datagram (for tests and NACKs; the data path packs in place)."""
    return HEADER.pack(*header) + payload


def decode(
    buf: bytes | bytearray | memoryview,
    nbytes: int,
    *,
    job_token: int,
    world: int,
    me: int,
    mtu: int,
) -> Header | str:
    """Validate everything a datagram can be checked for without round state.

    Round window and offset+count against the shard's length are checked by the round, which
    knows the bucket size. The shard rule follows from Transpose AllReduce: a scatter DATA
    carries the receiver's shard, a gather DATA the sender's; a scatter NACK asks for the
    requester's shard, a gather NACK for the receiver's.
    """
    if nbytes < HEADER_BYTES:
        return "short"
    if nbytes > mtu - IP_UDP_BYTES:
        return "oversize"
    h = Header._make(HEADER.unpack_from(buf, 0))
    if h.magic != MAGIC:
        return "magic"
    if h.version != VERSION:
        return "version"
    if h.kind not in KINDS:
        return "kind"
    if h.stage not in (SCATTER, GATHER):
        return "stage"
    if h.job_token != job_token:
        return "job_token"
    if h.src >= world or h.src == me:
        return "sender"
    if h.shard >= world:
        return "shard"
    if h.kind == DATA:
        if h.flags & ~DATA_FLAGS:
            return "flags"
        owner = me if h.stage == SCATTER else h.src
        if h.shard != owner:
            return "shard"
        per_pkt = elems_per_packet(mtu)
        if h.count == 0 or h.count > per_pkt:
            return "count"
        if nbytes != HEADER_BYTES + ELEM_BYTES * h.count:
            return "length"
        if h.offset % per_pkt:
            return "offset"
        return h
    if h.flags:
        return "flags"
    owner = h.src if h.stage == SCATTER else me
    if h.shard != owner:
        return "shard"
    if h.count == 0 or h.count > ranges_per_nack(mtu):
        return "count"
    if nbytes != HEADER_BYTES + RANGE.size * h.count:
        return "length"
    if h.offset or h.timeout_us:
        return "nack_fields"
    return h


def nack_ranges(buf: bytes | bytearray | memoryview, count: int) -> list[tuple[int, int]]:
    """The (offset, count) pairs of a decoded NACK (decode already checked the length)."""
    return [RANGE.unpack_from(buf, HEADER_BYTES + RANGE.size * i) for i in range(count)]


def nack_payload(ranges: list[tuple[int, int]]) -> bytes:
    return b"".join(RANGE.pack(off, cnt) for off, cnt in ranges)
