"""Burst presets: frozen data parsed from TOML, with a content hash recorded in every run.

A preset is a list of *streams*. Each stream is one arrival process (interval between burst
starts = ``min_gap_s`` + Exp(``mean_extra_gap_s``)); every burst of a stream lasts
``duration_s`` and hits all of the stream's targets at once (e.g. pod 0's
aggregation->core uplinks *and* one worker's edge downlink). Magnitude units depend on the kind:

- ``loss``: drop probability (``mode`` random | nth | gilbert; gilbert reads ``[gilbert]``
  and uses ``magnitude`` as the bad state's loss probability),
- ``squeeze``: fraction of the link's HTB rate left during the burst (0 < f <= 1),
- ``incast``: offered load into the target downlink as a multiple of its rate, spread over
  ``senders`` idle hosts (``sham = true`` sends the same traffic to idle neighbours instead),
- ``delay``: added one-way delay in ms (netem only).

A stream with ``align = "round"`` has no arrival process: its events hit whole rounds of the
run (``[rounds]``: how many, 2-3 isolated ones or a fraction of them, drawn per run from the
seed), switched on when the round starts and off when every rank has finished it (the paper's
one-round loss events; see ``bursts/rounds.py``).

A preset also says what it is for, ``role``: ``"burst"`` (the default), ``"calm"`` (the
burst-free reference, ``none``) or ``"control"`` (``sham``); run.json records it as
``preset_role`` and analysis reads roles, never preset names.

Built-ins live in ``testbed/bursts/presets/*.toml``; any TOML file with the same shape is a preset.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "Arrival",
    "Gilbert",
    "RoundPlan",
    "Preset",
    "PresetError",
    "PresetRole",
    "Stream",
    "Target",
    "MAX_EVENTS",
    "NEUTRAL",
    "builtin_names",
    "check_event_bound",
    "dump_preset",
    "load",
    "parse_preset",
]


class PresetError(ValueError):
    """A preset that cannot be used; the message names the offending field."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Arrival(_Frozen):
    """Start-to-start interval between bursts: ``min_gap_s`` + Exp(mean ``mean_extra_gap_s``)."""

    min_gap_s: float = Field(gt=0)
    mean_extra_gap_s: float = Field(default=0.0, ge=0)
    start_s: float = Field(default=0.0, ge=0, description="offset of the first burst after t0")


class Target(_Frozen):
    """Links by role, resolved against a topology and its worker hosts (see schedule.py).

    - ``worker_downlink`` / ``worker_uplink``: the edge->host (host->edge) direction of
      worker ``worker``'s access link;
    - ``all_worker_downlinks``: every worker's edge->host direction (each worker-to-worker
      flow crosses exactly one, so a loss rate L there is L on every flow);
    - ``tier_uplinks`` / ``tier_downlinks``: every link whose lower end is a ``tier`` router
      (of pod ``pod``, if given), in the up (down) direction — e.g. tier "aggregation",
      pod 0 = pod 0's aggregation->core uplinks;
    - ``link``: one named link ``"a-b"`` in direction ``up`` (a->b) or ``down`` (b->a).
    """

    role: Literal[
        "worker_downlink",
        "worker_uplink",
        "all_worker_downlinks",
        "tier_uplinks",
        "tier_downlinks",
        "link",
    ]
    worker: int | None = Field(default=None, ge=0)
    tier: Literal["host", "edge", "aggregation", "core", "leaf", "spine"] | None = None
    pod: int | None = Field(default=None, ge=0)
    link: str | None = None
    direction: Literal["up", "down"] | None = None

    @model_validator(mode="after")
    def _fields_for_role(self) -> Target:
        need = {
            "worker_downlink": ("worker",),
            "worker_uplink": ("worker",),
            "all_worker_downlinks": (),
            "tier_uplinks": ("tier",),
            "tier_downlinks": ("tier",),
            "link": ("link", "direction"),
        }[self.role]
        for name in need:
            if getattr(self, name) is None:
                raise ValueError(f"role {self.role!r} needs field {name!r}")
        return self


class Gilbert(_Frozen):
    """Two-state Markov loss, stepped every ``step_s``; ``magnitude`` is the bad-state loss."""

    p_good_to_bad: float = Field(gt=0, le=1)
    p_bad_to_good: float = Field(gt=0, le=1)
    loss_good: float = Field(default=0.0, ge=0, le=1)
    step_s: float = Field(default=0.01, gt=0)


class RoundPlan(_Frozen):
    """Which rounds a round-aligned stream hits, at seeded rounds after the first ``skip`` (the
    reliable warm-up round); exactly one of

    - ``count`` = [least, most] events per run, never two adjacent (each hit round has calm
      neighbours), the paper's 2-3 one-round events (the default when neither is given);
    - ``fraction`` f of the eligible rounds, round(f x (rounds - skip)) of them, adjacent ones
      allowed: the dose-response presets, where 6-60% of a run's rounds are hit.
    """

    count: tuple[int, int] | None = None
    fraction: float | None = Field(default=None, gt=0, le=0.9)
    skip: int = Field(default=1, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _count_by_default(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("count") is None and data.get("fraction") is None:
            return {**data, "count": (2, 3)}
        return data

    @model_validator(mode="after")
    def _one_rule(self) -> RoundPlan:
        if self.count is not None and self.fraction is not None:
            raise ValueError("fraction: give count or fraction, not both")
        if self.count is not None and not 1 <= self.count[0] <= self.count[1]:
            raise ValueError("count: [least, most] with 1 <= least <= most")
        return self

    def most_hits(self, total: int | None) -> int:
        """An upper bound on the rounds hit in a run of ``total`` rounds (0 when unknown: a
        fraction plan cannot be generated without the run's round count)."""
        if self.count is not None:
            return self.count[1]
        return 0 if total is None else math.ceil(self.fraction * max(total - self.skip, 0))


class Stream(_Frozen):
    kind: Literal["loss", "squeeze", "incast", "delay"]
    magnitude: float = Field(ge=0)
    align: Literal["time", "round"] = "time"
    duration_s: float | None = Field(default=None, gt=0)
    arrival: Arrival | None = None
    rounds: RoundPlan | None = None
    targets: Annotated[tuple[Target, ...], Field(min_length=1)]
    mode: Literal["random", "nth", "gilbert"] = "random"
    gilbert: Gilbert | None = None
    senders: int = Field(default=4, ge=1)
    sham: bool = False
    #: Loss spares the UDP transports' TCP control links (`--control tcp`): the paper's
    #: events lose data, and a lossy control link measures TCP's RTO backoff instead (at 90%,
    #: 17-23 timeouts per host and every hit round at a 50x cap, for dblp and mlt alike).
    spare_control: bool = False

    @model_validator(mode="after")
    def _align_rules(self) -> Stream:
        if self.spare_control and self.align != "round":
            raise ValueError("spare_control: applies to round-aligned loss (align = 'round')")
        if self.align == "time":
            for name in ("duration_s", "arrival"):
                if getattr(self, name) is None:
                    raise ValueError(f"{name}: a time-windowed stream needs it")
            if self.rounds is not None:
                raise ValueError("rounds: applies to align = 'round' only")
            return self
        if self.duration_s is not None or self.arrival is not None:
            raise ValueError("align: a round-aligned event lasts its round: no duration_s, arrival")
        if self.kind != "loss" or self.mode == "gilbert":
            raise ValueError("align: rounds are hit by loss (mode random or nth) only")
        if self.rounds is None:
            raise ValueError("rounds: a round-aligned stream needs a [rounds] table")
        return self

    @model_validator(mode="after")
    def _kind_rules(self) -> Stream:
        if self.kind == "loss" and self.magnitude > 1:
            raise ValueError("magnitude: a loss probability must be <= 1")
        if self.kind == "loss" and self.mode == "nth" and 0 < self.magnitude < 1e-6:
            raise ValueError("magnitude: nth loss needs a probability >= 1e-6")
        if self.kind == "squeeze" and not 0 < self.magnitude <= 1:
            raise ValueError("magnitude: a squeeze keeps a fraction 0 < f <= 1 of the rate")
        if self.mode != "random" and self.kind != "loss":
            raise ValueError(f"mode: {self.mode!r} applies to kind 'loss' only")
        if (self.mode == "gilbert") != (self.gilbert is not None):
            raise ValueError("gilbert: give a [gilbert] table exactly when mode = 'gilbert'")
        if self.kind == "incast":
            if self.magnitude <= 0:
                raise ValueError("magnitude: incast load must be > 0")
            bad = [t.role for t in self.targets if t.role != "worker_downlink"]
            if bad:
                raise ValueError(f"targets: incast converges on a worker_downlink, not {bad}")
        elif self.sham:
            raise ValueError("sham: applies to kind 'incast' only")
        return self


#: What a preset is for, as analysis reads it from run.json's `preset_role`: "calm" (the
#: burst-free reference), "control" (a burst's CPU cost without its network effect), "burst".
PresetRole = Literal["calm", "control", "burst"]


class Preset(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    role: PresetRole = "burst"
    streams: tuple[Stream, ...] = ()

    @model_validator(mode="after")
    def _one_alignment(self) -> Preset:
        if len({s.align for s in self.streams}) > 1:
            raise ValueError("streams: round-aligned and time-windowed streams cannot mix")
        return self

    @property
    def round_aligned(self) -> bool:
        """True when the events follow the run's rounds, not a timeline."""
        return any(s.align == "round" for s in self.streams)

    def control(self) -> Preset:
        """This preset's CPU cost without its network effect (the `sham` idea, for any preset):
        the same streams and so the same seeded windows, with loss rules rewritten at
        probability 0, squeezes to the full rate, delays of 0 ms, and incast senders sending the
        same traffic to idle neighbours (`sham`). The calibration of `--dilation auto` plays it:
        the burst player's work and an incast's forwarding compete for the cores the run uses."""
        return Preset(
            name=f"{self.name}-control", role="control", streams=tuple(map(_neutral, self.streams)),
            description=f"{self.name}'s CPU cost without its network effect (Preset.control)",
        )  # fmt: skip

    @property
    def hash(self) -> str:
        """sha256 of what the preset *does* (streams), not of its name or prose. The alignment
        fields are left out of time-windowed streams, so their hashes predate them."""
        body = json.dumps([_hashed(s) for s in self.streams], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()[:16]


#: A kind's magnitude that leaves the network as it is.
NEUTRAL = {"loss": 0.0, "squeeze": 1.0, "delay": 0.0}


def _neutral(s: Stream) -> Stream:
    """The stream with its network effect gone: an incast's senders send to idle neighbours
    (`sham`), the rest take their NEUTRAL magnitude (a Gilbert loss its good state's too)."""
    if s.kind == "incast":
        return s.model_copy(update={"sham": True})
    gilbert = s.gilbert.model_copy(update={"loss_good": 0.0}) if s.gilbert else None
    return s.model_copy(update={"magnitude": NEUTRAL[s.kind], "gilbert": gilbert})


def _hashed(s: Stream) -> dict:
    d = s.model_dump(mode="json")
    if s.align == "time":
        for name in ("align", "rounds"):
            d.pop(name)
    if not s.spare_control:
        d.pop("spare_control")  # hashes predate it
    if s.rounds is not None:
        for name in ("count", "fraction"):  # hashes predate fraction; a plan holds one of them
            if d["rounds"][name] is None:
                d["rounds"].pop(name)
    return d


#: Most events one schedule may hold: a 100-epoch training run under `heavy` plans about
#: 250,000 (a few hundred MB); an unbounded schedule exhausts memory instead.
MAX_EVENTS = 500_000


def check_event_bound(preset: Preset, duration_s: float, rounds: int | None = None) -> None:
    """Refuse a schedule too long to generate: PresetError names the limit and the stream.

    Counted before any event exists: per stream, bursts <= span / min_gap_s + 1, each with
    duration_s / step_s Gilbert–Elliott steps and one event per target; a round-aligned
    stream makes one event per hit round (of the run's ``rounds``) and target."""
    total = 0.0
    for i, s in enumerate(preset.streams):
        if s.align == "round":
            total += s.rounds.most_hits(rounds) * len(s.targets)
            over = f"{rounds} rounds of the run"
        else:
            bursts = max(0.0, duration_s - s.arrival.start_s) / s.arrival.min_gap_s + 1
            steps = s.duration_s / s.gilbert.step_s + 1 if s.gilbert else 1
            total += bursts * steps * len(s.targets)
            over = f"{duration_s:g} s of schedule"
        if total > MAX_EVENTS:
            gap = "" if s.align == "round" else f" (min_gap_s {s.arrival.min_gap_s:g})"
            raise PresetError(
                f"streams[{i}]: over {over} this preset makes more than "
                f"MAX_EVENTS = {MAX_EVENTS:,} events{gap}; use a shorter run or rarer bursts"
            )


def _field_path(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def parse_preset(text: str, source: str = "<string>") -> Preset:
    """Parse TOML text into a Preset; PresetError names the source and the bad field."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"{source}: not valid TOML: {exc}") from exc
    try:
        return Preset.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise PresetError(f"{source}: {_field_path(first['loc'])}: {first['msg']}") from exc


def dump_preset(preset: Preset) -> str:
    """TOML text that `parse_preset` reads back as `preset`: a derived preset as a file a run
    can name in `--burst` (and its run folder keeps)."""
    import tomli_w

    return tomli_w.dumps(preset.model_dump(mode="json", exclude_none=True))


def builtin_names() -> list[str]:
    """Names of the presets shipped in testbed/bursts/presets/."""
    folder = resources.files("testbed.bursts") / "presets"
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def load(name_or_path: str | Path) -> Preset:
    """A built-in preset by name, or any TOML file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise PresetError(f"preset file {path} {what}")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise PresetError(f"preset file {path} is not UTF-8 text (a TOML file?)") from None
        return parse_preset(text, str(path))
    name = str(name_or_path)
    if name not in builtin_names():
        raise PresetError(f"unknown preset {name!r}; built-ins: {', '.join(builtin_names())}")
    text = (resources.files("testbed.bursts") / "presets" / f"{name}.toml").read_text()
    return parse_preset(text, f"preset {name}")
