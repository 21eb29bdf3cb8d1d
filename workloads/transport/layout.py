"""Where each element of a bucket travels: N contiguous shards, each cut into packets."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Layout:
    """Shard j = elements [start(j), start(j) + length(j)); rank j owns it.

    Shards are as equal as np.array_split makes them (the first n % N get one extra element),
    so any n works: not divisible by N, fewer elements than N (some shards empty), or 0.
    Packet i of a shard carries elements [i*per_pkt, min((i+1)*per_pkt, length)) of it; offsets
    are always packet-aligned, which lets a receiver validate a datagram exactly.
    """

    n: int
    world: int
    per_pkt: int
    _starts: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.n < 0 or self.world < 1 or self.per_pkt < 1:
            raise ValueError(f"bad layout n={self.n} world={self.world} per_pkt={self.per_pkt}")
        base, extra = divmod(self.n, self.world)
        starts = [0]
        for j in range(self.world):
            starts.append(starts[-1] + base + (1 if j < extra else 0))
        object.__setattr__(self, "_starts", tuple(starts))

    def start(self, j: int) -> int:
        return self._starts[j]

    def length(self, j: int) -> int:
        return self._starts[j + 1] - self._starts[j]

    def npkts(self, j: int) -> int:
        return -(-self.length(j) // self.per_pkt)

    def pkt(self, j: int, i: int) -> tuple[int, int]:
        """(offset within shard j, element count) of packet i."""
        off = i * self.per_pkt
        return off, min(self.per_pkt, self.length(j) - off)
