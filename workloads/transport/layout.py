"""Where each element of a bucket travels: N contiguous shards, each cut into packets.

Two collectives share it: the transpose all-reduce (every rank owns an equal shard) and the
parameter server (`owner` set: that rank owns the whole bucket, every other rank none). The
second is the first with uneven ownership, so every completion policy, repair and the
compiled receive path serve both unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Layout:
    """Shard j = elements [start(j), start(j) + length(j)); rank j owns it.

    Shards are as equal as np.array_split makes them (the first n % N get one extra element),
    so any n works: not divisible by N, fewer elements than N (some shards empty), or 0.
    With `owner` set, shard `owner` is the whole bucket and every other shard is empty: the
    owner (a parameter server) reduces everything; its own input is added as given (a server
    passes zeros) but is not counted as a contribution, so the mean is over the other
    world - 1 ranks (`contributors`).
    Packet i of a shard carries elements [i*per_pkt, min((i+1)*per_pkt, length)) of it; offsets
    are always packet-aligned, which lets a receiver validate a datagram exactly.
    """

    n: int
    world: int
    per_pkt: int
    owner: int | None = None
    _starts: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.n < 0 or self.world < 1 or self.per_pkt < 1:
            raise ValueError(f"bad layout n={self.n} world={self.world} per_pkt={self.per_pkt}")
        if self.owner is not None:
            if not 0 <= self.owner < self.world or self.world < 2:
                raise ValueError(f"bad layout owner={self.owner} world={self.world}")
            starts = [0] * (self.owner + 1) + [self.n] * (self.world - self.owner)
            object.__setattr__(self, "_starts", tuple(starts))
            return
        base, extra = divmod(self.n, self.world)
        starts = [0]
        for j in range(self.world):
            starts.append(starts[-1] + base + (1 if j < extra else 0))
        object.__setattr__(self, "_starts", tuple(starts))

    @property
    def contributors(self) -> int:
        """Ranks whose data enter the sum: the hooks' N (a parameter server is not one)."""
        return self.world if self.owner is None else self.world - 1

    def contributes(self, rank: int) -> bool:
        return rank != self.owner

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
