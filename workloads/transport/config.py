"""Transport settings shared by every rank of a job, each knob declared once.

A knob is a `TransportConfig` field made by `knob()`: its default and its range (pydantic's
gt/ge/lt/le names), which `__post_init__` checks, and, when the worker's command line sets it,
its `--help` text. The worker's spec (workloads/spec.py) generates a flag for every knob with
help text, reusing its default and range, and hands the transport every knob it sets by name
(`played`): a new knob is its declaration here and its use (docs/design.md, Transports).
Nothing here imports outside workloads/transport/, so the transport stays standalone.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args, get_origin, get_type_hints

from workloads.transport import dilation as tdilation
from workloads.transport.dilation import DURATION, RATE, TimeDilation

MIB = 1 << 20
_OPS = {"gt": (operator.gt, ">"), "ge": (operator.ge, ">="),
        "lt": (operator.lt, "<"), "le": (operator.le, "<=")}  # fmt: skip


def knob(
    default: Any,
    help: str | None = None,
    *,
    flag: str | None = None,
    dilate: str | None = None,
    **limits: float,
) -> Any:
    """A TransportConfig field: its default, its range (`limits`), its `--help` text when the
    worker's spec should generate a flag of the same name for it, or `flag`, the spec field of
    another name that sets it (declared by the spec itself, e.g. a run knob the transport
    reads); with neither, the worker never sets it. `dilate`: DURATION or RATE, how the value
    moves under time dilation D (workloads/transport/dilation.py); its range is about the
    emulated value, so its bounds move too."""
    return field(
        default=default, metadata={"help": help, "flag": flag, "dilate": dilate, "limits": limits}
    )


@dataclass(frozen=True)
class Knob:
    """One TransportConfig field's declaration, as the worker's spec reads it."""

    name: str
    type: Any
    default: Any
    limits: dict[str, float]
    help: str | None
    flag: str | None  # the worker's spec field that sets it, or None
    dilate: str | None


@dataclass(frozen=True)
class TransportConfig:
    """One job's transport parameters; every rank must use the same values.

    Rates and durations are as played: the caller gives them already scaled by the run's time
    dilation D (`played` does it), and `time_scale` = D (`dilation`) scales the transport's own
    fixed time constants (the idle detector's floor).
    """

    #: each rank's total pacing rate in Mbit/s (L2 bytes on the wire); each sender->receiver
    #: pair gets rate/(N-1), repairs included
    rate_mbps: float = knob(100.0, flag="pace_mbps", dilate=RATE, gt=0, le=100_000)
    mtu: int = knob(1500, flag="mtu", ge=576, le=65535)
    ports_per_peer: int = knob(4, ge=1, le=64)
    base_port: int = knob(47000, "UDP ports base + rank*k + i.", ge=1024, le=65_000)
    t_max_ms: float | None = knob(
        None, "Hard cap per round, ms (default: --t-max-p50 x the calibrated p50).",
        dilate=DURATION, gt=0, le=600_000,
    )  # fmt: skip
    #: with t_max_ms None the hard cap of every policy is t_max_p50 x the calibrated burst-free
    #: p50 (TransposeAllReduce.calibrate), and the whole timeout of optireduce's fixed mode
    t_max_p50: float = knob(
        4.0, "Hard cap per round as a multiple of the calibrated burst-free p50, when "
        "--t-max-ms is not given: optireduce fixed waits this long for a lossy round (the "
        "timeout axis of `make reproduce`).", gt=1, le=1000,
    )  # fmt: skip
    optireduce_mode: Literal["adaptive", "fixed"] = knob(
        "adaptive", "optireduce: round timeout rule."
    )
    rescale: bool = knob(False, "optireduce: unbiased mean of what arrived.")
    stop: Literal["early", "idle"] = knob(
        "idle", "dblp, mlt: end a stage as soon as (1 - ε) of it is in and tell the senders to "
        "stop (early, the paper's rule), or once the stream is idle too (idle).",
    )  # fmt: skip
    fill: Literal["zero", "rescale"] | None = knob(
        None, "dblp, mlt: what stands in for missing data: zero (the paper's: it counts 0) or "
        "rescale (scatter sums x N / contributions, gathered elements N x own); default: dblp "
        "rescale, mlt zero.",
    )  # fmt: skip
    control: Literal["udp", "tcp"] = knob(
        "udp", "dblp, mlt: repairs asked by NACK datagrams, repeated while unanswered (udp), or "
        "the paper's probe / bitmap / Stop over one TCP connection per peer pair (tcp).",
    )  # fmt: skip
    sock_buf_bytes: int = knob(32 * MIB, ge=65536)
    #: seeded loss injected at the receiving socket, for tests and the loopback benchmark only
    drop: float = knob(0.0, "Injected receive-side loss (loopback experiments).", ge=0, lt=1)
    seed: int = knob(0, flag="seed")
    time_scale: float = knob(1.0, **tdilation.LIMITS)  # the run's time dilation D
    #: the compiled data path takes received DATA and stages first transmissions
    fastpath: bool = knob(
        True, "UDP transports: the compiled data path (workloads/transport/fastpath.c) when it "
        "is built; off: the Python path alone, for an A/B.",
    )  # fmt: skip

    #: a keyed MAC on every datagram (integrity.py): forged datagrams from a member's address
    #: are rejected even by a sender that knows the token; costs CPU, runs the Python path
    integrity: Literal["off", "mac"] = knob(
        "off", "UDP transports: a keyed MAC on every datagram (BLAKE2b, key drawn at "
        "rendezvous), so a host that can spoof a member's address but lacks the key cannot "
        "inject; off: the job token alone (sent in clear). mac runs the Python data path.",
    )  # fmt: skip

    def __post_init__(self) -> None:
        # time_scale first: the dilated knobs' bounds move with it
        for k in sorted(knobs(), key=lambda k: k.name != "time_scale"):
            value = getattr(self, k.name)
            choices = _choices(k.type)
            if choices and value not in choices:
                named = "|".join(str(c) for c in choices if c is not None)
                raise ValueError(f"{k.name} must be {named}, got {value!r}")
            if value is None or not k.limits:
                continue
            bounds = dict(k.limits)
            if k.dilate:  # played: D's own check came first
                bounds = {op: self.dilation.played_as(k.dilate, b) for op, b in bounds.items()}
            if not all(_OPS[op][0](value, bound) for op, bound in bounds.items()):
                rule = " and ".join(f"{_OPS[op][1]} {bound:g}" for op, bound in bounds.items())
                raise ValueError(f"{k.name} must be {rule}, got {value}")

    @classmethod
    def played(cls, given: Mapping[str, Any], time_scale: float = 1.0) -> TransportConfig:
        """The config of knobs given by name in emulated time (None: the knob's default),
        played under time dilation D = `time_scale`: durations x D, rates / D."""
        dil = TimeDilation(time_scale)
        out: dict[str, Any] = {}
        for k in knobs():
            if k.name not in given:
                continue
            value = k.default if given[k.name] is None else given[k.name]
            out[k.name] = None if value is None else dil.played_as(k.dilate, value)
        return cls(**out, time_scale=time_scale)

    @property
    def dilation(self) -> TimeDilation:
        """The run's time dilation D (`time_scale`, under that name in run.json)."""
        return TimeDilation(self.time_scale)

    def last_port(self, world: int) -> int:
        """Highest UDP port a job of `world` ranks binds (base + rank*k + i)."""
        return self.base_port + world * self.ports_per_peer - 1


def _choices(tp: Any) -> tuple[Any, ...]:
    """A Literal's values (an optional one's too: None, its default, is checked apart)."""
    if get_origin(tp) is Literal:
        return get_args(tp)
    given = [a for a in get_args(tp) if a is not type(None)]
    if len(given) == 1 and get_origin(given[0]) is Literal:
        return (*get_args(given[0]), None)
    return ()


@functools.cache
def knobs() -> tuple[Knob, ...]:
    """Every TransportConfig knob's declaration, in field order."""
    hints = get_type_hints(TransportConfig)
    out = []
    for f in fields(TransportConfig):
        m = f.metadata
        flag = f.name if m["help"] else m["flag"]
        out.append(
            Knob(f.name, hints[f.name], f.default, m["limits"], m["help"], flag, m["dilate"])
        )
    return tuple(out)


def limits(name: str) -> dict[str, float]:
    """Knob `name`'s range, for a field elsewhere that must accept the same values."""
    return next(k.limits for k in knobs() if k.name == name)
