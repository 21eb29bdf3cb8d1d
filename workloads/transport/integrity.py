"""The opt-in datagram MAC (`--integrity mac`): who may write into a round when the token
alone is not enough.

The job token travels in clear in every datagram, so anyone who sees one datagram and can
send from a member's (IP, port) passes every other check: it can inject finite values, ask
for repairs, or STOP a stage. With `integrity = "mac"` every datagram (DATA, NACK, PROBE,
STOP, over UDP or the TCP control link) carries FLAG_MAC and a 16-byte keyed BLAKE2b of its
header and payload (hashlib, i.e. the reference BLAKE2 code CPython ships), right after the
header (wire.py declares the layout). The 256-bit key is drawn by rank 0 at rendezvous and
shared over the group's own connections, as the token is (TransposeAllReduce
.from_process_group); it never travels in a datagram, so an on-path host that sees every
datagram still cannot forge one. The header's round and rank are covered, so a captured
datagram replays only as a duplicate or a late one.

The compiled data path does not check MACs: with the MAC on, the engine runs the Python path
(fastpath.c would need a keyed hash of its own, i.e. linking libcrypto, for a path whose cost
is then dominated by the hash anyway; see benchmarks/integrity_cost.py). Off by default:
within one cluster's trust domain the token suffices, and the MAC costs CPU per MiB.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable

from workloads.transport import wire

KEY_BYTES = 32


def new_mac_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


class Mac:
    """One job's MAC: tags datagrams this rank sends and checks those it receives."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"the MAC key must be {KEY_BYTES} bytes")
        # Keyed once; each datagram copies the keyed state (cheaper than keying again).
        self._keyed = hashlib.blake2b(key=key, digest_size=wire.MAC_BYTES)

    def tag(self, header, payload) -> bytes:
        h = self._keyed.copy()
        h.update(header)
        h.update(payload)
        return h.digest()

    def sign_into(self, slot: memoryview, payload) -> None:
        """Write the MAC into a send slot holding a packed header (FLAG_MAC set) then
        MAC_BYTES of room; `payload` is what the datagram carries after them."""
        slot[wire.HEADER_BYTES : wire.body_offset(True)] = self.tag(
            slot[: wire.HEADER_BYTES], payload
        )

    def seal(self, dgram: bytes) -> bytes:
        """A control datagram built without a MAC (wire.control_datagram, wire.encode), with
        FLAG_MAC set and its MAC inserted after the header."""
        fields = list(wire.HEADER.unpack_from(dgram))
        fields[4] |= wire.FLAG_MAC  # flags
        header = wire.HEADER.pack(*fields)
        payload = dgram[wire.HEADER_BYTES :]
        return header + self.tag(header, payload) + payload

    def checked(self, decode: Callable) -> Callable:
        """`decode` (a wire.decoder with mac=True) that also rejects a datagram whose MAC is
        wrong ("mac"); the MAC is checked last, on datagrams that are otherwise well formed."""
        tag, body = self.tag, wire.body_offset(True)
        same = hmac.compare_digest

        def check(buf, nbytes: int):
            h = decode(buf, nbytes)
            if h.__class__ is str:
                return h
            mv = memoryview(buf)
            if not same(
                tag(mv[: wire.HEADER_BYTES], mv[body:nbytes]), mv[wire.HEADER_BYTES : body]
            ):
                return "mac"
            return h

        return check
