"""The datagram format: a fixed 40-byte little-endian header, then the payload.

DATA carries float32 elements of one shard (packet-aligned offset, in elements); NACK carries
(offset, count) uint32 pairs naming the missing element ranges of one shard. PROBE (a sender
has finished a pass of one stage: what is still missing?) and STOP (the receiver has ended
that stage: send no more of it) are a bare header. A payload never exceeds MTU - 28 (IPv4 +
UDP) - 40 bytes, so with IP_PMTUDISC_DO nothing is fragmented. The same datagrams, each
behind a 2-byte length, are the frames of the TCP control channel (control.py).

With `--integrity mac` every datagram carries FLAG_MAC and a MAC_BYTES keyed MAC right after
the header, before the payload (integrity.py computes it over header and payload); the
payload of a packet is that much smaller. NACK ranges are written sorted and disjoint.

Every received datagram goes through `decode`, which returns a Header or the reason it was
rejected; it never raises, whatever the bytes. The job token is a 64-bit per-job secret (drawn
by rank 0 at rendezvous, see `new_job_token`): a datagram from another job, or from a sender
that never joined this one, fails it. Membership by source address is the engine's check (the
header's `src` is only a claim), and so are the round window and the payload's values.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Callable
from typing import NamedTuple

MAGIC = 0x504C4244  # b"DBLP" read little-endian
VERSION = 2  # 2: 64-bit job token
HEADER = struct.Struct("<IBBBBQIHHIIII")
HEADER_BYTES = HEADER.size  # 40
TOKEN_BITS = 64
IP_UDP_BYTES = 28

DATA = 1
NACK = 2
PROBE = 3  # data sender -> receiver, over TCP only (--control tcp)
STOP = 4  # data receiver -> sender, over UDP or TCP
KINDS = (DATA, NACK, PROBE, STOP)

SCATTER = 0
GATHER = 1

FLAG_LAST = 0x01  # the final packet of a sender's first transmission of this stage
FLAG_REPAIR = 0x02  # a retransmission answering a NACK
DATA_FLAGS = FLAG_LAST | FLAG_REPAIR
FLAG_MAC = 0x04  # any kind: MAC_BYTES of MAC follow the header (--integrity mac)
MAC_BYTES = 16

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


def new_job_token() -> int:
    """A fresh per-job secret: non-zero, so a forgotten token (0) never matches a real job."""
    return secrets.randbits(TOKEN_BITS) or 1


def body_offset(mac: bool = False) -> int:
    """Where a datagram's payload begins: after the header, and the MAC if there is one."""
    return HEADER_BYTES + (MAC_BYTES if mac else 0)


def payload_bytes(mtu: int, mac: bool = False) -> int:
    """Largest payload that fits one unfragmented IPv4 datagram."""
    return mtu - IP_UDP_BYTES - body_offset(mac)


def elems_per_packet(mtu: int, mac: bool = False) -> int:
    return payload_bytes(mtu, mac) // ELEM_BYTES


def ranges_per_nack(mtu: int, mac: bool = False) -> int:
    return payload_bytes(mtu, mac) // RANGE.size


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
    mac: bool = False,
) -> Header | str:
    """Validate everything a datagram can be checked for without round state.

    Round window and offset+count against the shard's length are checked by the round, which
    knows the bucket size. The shard rule follows from Transpose AllReduce: a scatter DATA
    carries the receiver's shard, a gather DATA the sender's; a scatter NACK asks for the
    requester's shard, a gather NACK for the receiver's. A PROBE follows DATA's rule (it
    comes from the data's sender), a STOP NACK's (it comes from the data's receiver).
    `mac`: the layout with a MAC (its value is integrity.py's to check).
    """
    return decoder(job_token=job_token, world=world, me=me, mtu=mtu, mac=mac)(buf, nbytes)


def decoder(
    *, job_token: int, world: int, me: int, mtu: int, mac: bool = False
) -> Callable[..., Header | str]:
    """`decode` bound to one rank's constants: the receive loop calls it once per datagram,
    so everything that does not depend on the bytes is computed here, once."""
    max_bytes = mtu - IP_UDP_BYTES
    per_pkt = elems_per_packet(mtu, mac)
    max_ranges = ranges_per_nack(mtu, mac)
    body = body_offset(mac)
    unpack = HEADER.unpack_from
    make = tuple.__new__
    must = FLAG_MAC if mac else 0  # FLAG_MAC set exactly when the job uses MACs
    bad_flags = ~(DATA_FLAGS | must)

    def check(buf: bytes | bytearray | memoryview, nbytes: int) -> Header | str:
        if nbytes < HEADER_BYTES:
            return "short"
        if nbytes > max_bytes:
            return "oversize"
        t = unpack(buf, 0)
        magic, version, kind, stage, flags, token, _rnd, src, shard, offset, count = t[:11]
        if magic != MAGIC:
            return "magic"
        if version != VERSION:
            return "version"
        if kind != DATA and kind != NACK and kind != PROBE and kind != STOP:
            return "kind"
        if stage != SCATTER and stage != GATHER:
            return "stage"
        if token != job_token:
            return "job_token"
        if src >= world or src == me:
            return "sender"
        if shard >= world:
            return "shard"
        if kind == DATA:
            if flags & bad_flags or (flags & FLAG_MAC) != must:
                return "flags"
            if shard != (me if stage == SCATTER else src):
                return "shard"
            if count == 0 or count > per_pkt:
                return "count"
            if nbytes != body + ELEM_BYTES * count:
                return "length"
            if offset % per_pkt:
                return "offset"
            return make(Header, t)
        if flags != must:
            return "flags"
        if kind == PROBE:
            if shard != (me if stage == SCATTER else src):
                return "shard"
        elif shard != (src if stage == SCATTER else me):
            return "shard"
        if kind != NACK:
            if count or nbytes != body:
                return "length"
            if offset or t[12]:
                return "nack_fields"
            return make(Header, t)
        if count == 0 or count > max_ranges:
            return "count"
        if nbytes != body + RANGE.size * count:
            return "length"
        if offset or t[12]:
            return "nack_fields"
        return make(Header, t)

    return check


def nack_ranges(buf: bytes | bytearray | memoryview, count: int) -> list[tuple[int, int]]:
    """The (offset, count) pairs of a decoded NACK (decode already checked the length)."""
    return [RANGE.unpack_from(buf, HEADER_BYTES + RANGE.size * i) for i in range(count)]


def control_datagram(
    kind: int, stage: int, job_token: int, rnd: int, src: int, shard: int, eps_id: int,
    payload: bytes = b"", count: int = 0,
) -> bytes:  # fmt: skip
    """A NACK, PROBE or STOP datagram (the data path packs DATA in place instead)."""
    h = Header(MAGIC, VERSION, kind, stage, 0, job_token, rnd & 0xFFFFFFFF, src, shard, 0, count,
               eps_id & 0xFFFFFFFF, 0)  # fmt: skip
    return encode(h, payload)


def nack_payload(ranges: list[tuple[int, int]]) -> bytes:
    return b"".join(RANGE.pack(off, cnt) for off, cnt in ranges)
