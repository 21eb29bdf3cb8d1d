"""The transport's traffic pattern as iperf3 flows, and the per-MiB figures of what they cost.

One declaration of the fair floor (issue 22): everything is derived from a run spec and the
transport's config, never copied. The workers are the spec's (`place_workers`: h1, h5, h9, h13
for 4 workers at k=4); each ordered pair of workers is paced at the rank's rate / (N - 1) in
L2 bytes (pacer.py), over the k = `ports_per_peer` UDP flows of `flowpaths.udp_flows`. The
floor sends the same: k iperf3 streams per ordered pair, each at a k-th of the pair's L2 rate,
in datagrams as large as the MTU allows.

iperf3 cannot reuse the transport's 5-tuples: a server serves one client on its own port and a
client cannot share a source port. So each floor flow gets its own ports, and the server port
is searched (`PathSearch`) until the kernel's ECMP lookup sends the floor flow along its
transport twin's path. Grouping: `flow` runs one iperf3 client and server per 5-tuple (as many
C senders as the transport has flows); `pair` runs one per ordered pair with `-P k` streams
from k consecutive source ports (fewer processes, so fewer wake-ups: a lower floor).
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.network.flowpaths import Flow, udp_flows
from workloads.transport.engine import PACE_BATCH
from workloads.transport.pacer import WIRE_OVERHEAD
from workloads.transport.wire import IP_UDP_BYTES

MIB = 1 << 20
GROUPINGS = ("flow", "pair")
#: The floor's client source ports count up from here, its server ports from SERVER_BASE:
#: apart from each other, from the transport's (47000 + rank * k + i) and iperf3's 5201/5202.
CLIENT_BASE = 40000
SERVER_BASE = 50000
LAST_PORT = 65535


@dataclass(frozen=True)
class FloorGroup:
    """One iperf3 client in `src` and its server in `dst`: a stream per source port."""

    src: str
    dst: str
    sports: tuple[int, ...]  # consecutive: iperf3 binds --cport + i for stream i of -P
    twins: tuple[Flow, ...]  # the transport flow each stream stands for, in stream order


@dataclass(frozen=True)
class Pattern:
    """The fair floor of one spec: its groups, each stream's iperf3 rate and datagram size."""

    hosts: tuple[str, ...]
    mtu: int
    pair_l2_mbps: float
    k: int  # flows per ordered pair
    groups: tuple[FloorGroup, ...]

    @property
    def blksize(self) -> int:
        """iperf3's `-l`: the largest datagram the MTU carries unfragmented, as the
        transport's."""
        return self.mtu - IP_UDP_BYTES

    @property
    def streams(self) -> int:
        return sum(len(g.sports) for g in self.groups)

    @property
    def stream_bps(self) -> int:
        """iperf3's `-b` per stream, a k-th of the pair's rate: iperf3 counts datagram payload,
        the pacer counts L2 frames."""
        per_flow = self.pair_l2_mbps * 1e6 / self.k
        return round(per_flow * self.blksize / (self.blksize + WIRE_OVERHEAD))

    @property
    def pacing_us(self) -> int:
        """iperf3's `--pacing-timer`, the transport's rhythm: its loop wakes to send to a peer
        once the pair's tokens buy PACE_BATCH full datagrams (iperf3's default, 1 ms, would
        wake every client more often than that at MTU 9000: wake-ups the floor should not
        pay)."""
        frame_bits = 8 * (self.blksize + WIRE_OVERHEAD)
        return round(PACE_BATCH * frame_bits / self.pair_l2_mbps)  # Mbit/s = bit/us

    def server_port(self, group: int, candidate: int) -> int:
        """Candidate `candidate` of a group's server port: distinct across every group and
        candidate, so any choice per group leaves every server its own port."""
        port = SERVER_BASE + candidate * len(self.groups) + group
        if port > LAST_PORT:
            raise ValueError(f"server port {port} > {LAST_PORT}: too many groups or candidates")
        return port

    def max_candidates(self) -> int:
        """Server port candidates each group can try within the port range."""
        return (LAST_PORT - SERVER_BASE + 1) // max(1, len(self.groups))


def pattern(
    hosts: tuple[str, ...], pace_mbps: float, mtu: int, base_port: int, k: int, grouping: str
) -> Pattern:
    """The floor of N = len(hosts) workers pacing `pace_mbps` each over k flows per pair."""
    if grouping not in GROUPINGS:
        raise ValueError(f"grouping {grouping!r}: use one of {GROUPINGS}")
    if len(hosts) < 2:
        raise ValueError("a fair floor needs at least 2 workers")
    flows = udp_flows(hosts, base_port, k)  # k consecutive flows per ordered pair
    size = 1 if grouping == "flow" else k
    groups = []
    for g, at in enumerate(range(0, len(flows), size)):
        twins = tuple(flows[at : at + size])
        first = CLIENT_BASE + g * size
        groups.append(
            FloorGroup(twins[0].src, twins[0].dst, tuple(range(first, first + size)), twins)
        )
    if groups and groups[-1].sports[-1] >= SERVER_BASE:
        raise ValueError(f"{len(flows)} flows: client ports would reach {SERVER_BASE}")
    return Pattern(tuple(hosts), mtu, pace_mbps / (len(hosts) - 1), k, tuple(groups))


def spec_pattern(spec, grouping: str) -> Pattern:
    """The floor of a run spec: its workers, pacing, MTU and the transport's ports."""
    from testbed.bursts.schedule.placement import place_workers
    from workloads.transport.config import TransportConfig

    if spec.dilation != 1:
        raise ValueError("the fair floor runs at D = 1 (iperf3 knows no dilation)")
    hosts = tuple(place_workers(spec.topology(), spec.workers))
    cfg = TransportConfig(base_port=spec.base_port)
    return pattern(hosts, spec.pace, spec.mtu, cfg.base_port, cfg.ports_per_peer, grouping)


class PathSearch:
    """Which server port each group takes: the candidate whose streams share their twins'
    paths, the best so far when none does all (ties: the earliest candidate)."""

    def __init__(self, pat: Pattern, twin_paths: dict[Flow, tuple[str, ...]]) -> None:
        self.pat = pat
        self.twin_paths = twin_paths
        self.best: list[tuple[int, int]] = [
            (-1, pat.server_port(g, 0)) for g in range(len(pat.groups))
        ]

    def pending(self) -> list[int]:
        """Groups with a stream not yet on its twin's path."""
        return [g for g, (n, _) in enumerate(self.best) if n < len(self.pat.groups[g].sports)]

    def flows(self, group: int, candidate: int) -> list[Flow]:
        g = self.pat.groups[group]
        port = self.pat.server_port(group, candidate)
        return [Flow(g.src, g.dst, s, port) for s in g.sports]

    def offer(self, group: int, candidate: int, paths: dict[Flow, tuple[str, ...]]) -> None:
        """Score one candidate by its streams' traced paths."""
        g = self.pat.groups[group]
        hits = 0
        for f, t in zip(self.flows(group, candidate), g.twins, strict=True):
            twin = self.twin_paths.get(t)
            hits += twin is not None and paths.get(f) == twin
        if hits > self.best[group][0]:
            self.best[group] = (hits, self.pat.server_port(group, candidate))

    def ports(self) -> list[int]:
        return [port for _, port in self.best]

    def matched(self) -> int:
        """Streams on their twin's path."""
        return sum(max(0, n) for n, _ in self.best)


def iperf3_figures(results: list[dict]) -> dict:
    """CPU per MiB delivered over every iperf3 client's `-J` report: each report's sender
    (host_total) and receiver (remote_total) CPU share of its wall time, summed."""
    if not results:
        raise ValueError("no iperf3 results")
    sender_ms = receiver_ms = delivered = sent = bits = 0.0
    for r in results:
        end = r["end"]
        cpu, total = end["cpu_utilization_percent"], end["sum"]
        wall = total["seconds"]
        sender_ms += cpu["host_total"] / 100 * wall * 1e3
        receiver_ms += cpu["remote_total"] / 100 * wall * 1e3
        sent += total["bytes"]
        delivered += total["bytes"] * (1 - total["lost_percent"] / 100)
        bits += total["bits_per_second"]
    mib = delivered / MIB
    return {
        "mbps": bits / 1e6,
        "lost_percent": 100 * (1 - delivered / sent) if sent else 0.0,
        "sender_ms_per_mib": sender_ms / mib,
        "receiver_ms_per_mib": receiver_ms / mib,
        "total_ms_per_mib": (sender_ms + receiver_ms) / mib,
    }
