"""What one DDP rank runs: the worker's part of the run spec, declared once.

`WorkerSpec` holds every knob the worker reads: name, type, default, range and help live in
the field. Everything else derives from it: `python -m workloads.train`'s flags
(`add_arguments`), the testbed's `RunSpec` (a subclass that adds the network, the bursts and
where results go) and with it `testbed run`'s flags, and the file the testbed hands each
worker (`--spec worker_spec.json`). A new worker knob is one field here.

A field's `panel` (in `json_schema_extra`) groups it in `--help`; a `None` default means "the
component's own default" (the phase controller's ε, the transport's pacing rate), so that
default is written once, where it acts. The transport's own knobs are not written here: each
is declared once, with its default, range and help, in workloads/transport/config.py, and
`WorkerSpec` gets a field for each (`transport_knobs`), so a new one is that declaration and
its use.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from workloads.recipe import RECIPES
from workloads.transport import config as tconfig
from workloads.transport import dilation as tdilation
from workloads.transport.completion import TCP, transport_names, transport_traits

Workload = Literal["train", "allreduce", "iperf3", "ping"]
#: The workloads a worker process runs; the probes (iperf3, ping) the testbed runs itself.
WORKER_WORKLOADS = ("train", "allreduce")
#: Every registered completion policy (workloads/transport/completion.py), then tcp.
Transport = Literal[transport_names()]  # type: ignore[valid-type]
Model = Literal["cnn", "mnist1d", "resnet"]
Phase = Literal["on", "off", "paper"]
Collective = Literal["tar", "ps"]

#: Gloo rendezvous port of rank 0 (torchrun's default too).
MASTER_PORT = 29500

#: `--help` panels, in reading order.
PANELS = NETWORK, BURSTS, WORKLOAD, TRANSPORT, OUTPUT = (
    "Network", "Bursts", "Workload", "Transport", "Output"
)  # fmt: skip


#: Knobs whose default is the model's recipe (workloads/recipe.py).
RECIPE_KNOBS = ("lr", "epochs", "batch_size")
#: A fraction in [0, 1): ε (a round must deliver something) and injected loss.
FRACTION = {"ge": 0, "lt": 1}


def knob(default: Any, panel: str, help: str, aliases: tuple[str, ...] = (), **limits: Any) -> Any:
    """A spec field: default, `--help` panel and text, optional older flag names, and its limits
    (pydantic's ge/gt/le/lt/pattern)."""
    extra = {"panel": panel, "aliases": list(aliases)}
    return Field(default, description=help, json_schema_extra=extra, **limits)


def _per_model(name: str) -> str:
    """The help's "(default: ...)" for a knob whose default is the model's recipe."""
    given = ", ".join(f"{m} {getattr(r, name):g}" for m, r in RECIPES.items())
    return f"(default: the model's recipe, workloads/recipe.py: {given})."


class SpecError(ValueError):
    """A bad spec; `field` names the culprit so a CLI can say which flag to fix."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    @property
    def flag(self) -> str:
        """The field as a command-line flag: `--batch-size`."""
        return "--" + self.field.replace("_", "-")


class _WorkerKnobs(BaseModel):
    """WorkerSpec's own fields; the transport's knobs follow them (`transport_knobs`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    workload: Workload = knob(
        "train", WORKLOAD, "What runs: train (DDP), allreduce (rounds of one bucket, no model), "
        "iperf3/ping (network probes, no workers)."
    )  # fmt: skip
    model: Model = knob(
        "cnn", WORKLOAD, "cnn: digits (8x8); mnist1d: MNIST-1D (1-D CNN with GroupNorm, AdamW, "
        "warm-up then cosine: the recipe qualified offline); resnet: synthetic CIFAR."
    )  # fmt: skip
    epochs: int | None = knob(
        None, WORKLOAD, "Training epochs " + _per_model("epochs"), ge=1, le=10_000
    )
    steps: int | None = knob(
        None, WORKLOAD, "Cap on training steps (all epochs).", ge=1, le=10_000_000
    )
    batch_size: int | None = knob(
        None, WORKLOAD, "Batch per rank " + _per_model("batch_size"), ge=1, le=65_536
    )
    lr: float | None = knob(
        None, WORKLOAD, "Peak learning rate of the model's optimizer " + _per_model("lr"),
        gt=0, le=10,
    )  # fmt: skip
    seed: int = knob(0, WORKLOAD, "Seed of bursts, ECMP, data and model.", ge=0, le=2**32 - 1)
    threads: int = knob(1, WORKLOAD, "Torch threads per rank.", ge=1, le=256)
    resync_every: int | None = knob(
        None, WORKLOAD, "Re-broadcast rank 0's parameters every M steps.", ge=1, le=1_000_000
    )
    size_mib: float = knob(4.0, WORKLOAD, "allreduce workload: bucket, MiB.", gt=0, le=1024)
    interval_ms: float = knob(
        20.0, WORKLOAD, "allreduce workload: compute gap between rounds, ms.", ge=0, le=60_000
    )
    rounds: int = knob(100, WORKLOAD, "allreduce workload: rounds.", ge=1, le=1_000_000)
    mtu: int = knob(
        1500, NETWORK, "MTU of every emulated interface, bytes (the transport's datagrams fill "
        "it; queues keep their size in bytes).", ge=1280, le=9000,
    )  # fmt: skip
    dilation: float = knob(
        1.0, NETWORK, "Time dilation D (DieCast): the network runs D x slower; the worker "
        "divides its pacing by D and stretches its compute, interval, t_max and timeouts by D.",
        **tdilation.LIMITS,
    )  # fmt: skip

    transport: Transport = knob("dblp", TRANSPORT, "Gradient transport.")
    collective: Collective = knob(
        "tar", TRANSPORT, "UDP transports' collective: tar (transpose all-reduce, every rank "
        "owns a shard) or ps (the paper's: every worker sends to one parameter server, its own "
        "host and process, which reduces and sends the mean back).",
    )  # fmt: skip
    bucket_cap_mb: float = knob(25.0, TRANSPORT, "DDP bucket cap, all transports.", gt=0, le=1024)
    pace_mbps: float | None = knob(
        None, TRANSPORT, "UDP pacing per rank, Mbit/s (testbed: 0.95 x bw; by hand: the "
        "transport's default).", aliases=("--rate-mbps",),
        **tconfig.limits("rate_mbps"),
    )  # fmt: skip
    phase: Phase = knob(
        "on", TRANSPORT, "dblp: ε by training phase (on), pinned (off), or the DBLP paper's "
        "schedule (paper: P_low first; from each epoch start P_low + p_gap, or P_low if "
        "Accordion's rule fired on the epoch before).",
    )  # fmt: skip
    p_low: float = knob(
        0.008, TRANSPORT, "dblp --phase paper: P_low, ε at the start and after Accordion's rule "
        "fires (default: the paper's).", **FRACTION,
    )  # fmt: skip
    p_gap: float = knob(
        0.40, TRANSPORT, "dblp --phase paper: k, ε is P_high = p_low + p_gap in the other "
        "epochs (default: the paper's).", **FRACTION,
    )  # fmt: skip
    eps_critical: float | None = knob(
        None, TRANSPORT, "dblp: ε in critical phases (default: the phase controller's).",
        **FRACTION,
    )  # fmt: skip
    eps_stable: float | None = knob(
        None, TRANSPORT, "dblp: ε in stable phases (default: the phase controller's).",
        **FRACTION,
    )  # fmt: skip
    epsilon: float | None = knob(
        None, TRANSPORT, "dblp: pinned ε (allreduce workload; training with --phase off); mlt: its "
        "fixed tolerance P.",
        **FRACTION,
    )  # fmt: skip
    checkpoint_every: int | None = knob(
        None, TRANSPORT, "dblp: steps between ε decisions (default: the phase controller's).",
        ge=1, le=100_000,
    )  # fmt: skip
    warmup_steps: int | None = knob(
        None, TRANSPORT, "dblp: critical steps at the start (default: the phase controller's).",
        ge=0, le=1_000_000,
    )  # fmt: skip

    @model_validator(mode="before")
    @classmethod
    def _recipe_defaults(cls, data: Any) -> Any:
        """lr, epochs and batch_size not given take the model's recipe's, so a spec always
        holds the numbers it trains with (and the digits demo's hash is what it was)."""
        if not isinstance(data, dict):
            return data
        model = data.get("model") or cls.model_fields["model"].default
        recipe = RECIPES.get(model) if isinstance(model, str) else None
        if recipe is None:  # an unknown model: its own field's check says so
            return data
        fill = {k: getattr(recipe, k) for k in RECIPE_KNOBS if data.get(k) is None}
        return data | fill

    @model_validator(mode="after")
    def _epsilon_pins_only_when_off(self) -> Any:
        traits = transport_traits(self.transport)  # mlt's ε is its one fixed tolerance
        fixed = traits.uses_epsilon and not traits.phase_aware
        if (
            self.workload == "train"
            and self.phase != "off"
            and not fixed
            and self.epsilon is not None
        ):
            raise ValueError(
                "epsilon: pins ε only with phase off (or in the allreduce workload); "
                "with phase on, set eps_critical / eps_stable; with phase paper, p_low / p_gap"
            )
        return self

    @model_validator(mode="after")
    def _ps_needs_udp(self) -> Any:
        if self.collective == "ps" and self.transport == TCP:
            raise ValueError(
                "collective: ps runs over the UDP transports; tcp is DDP's own ring over Gloo"
            )
        return self

    @model_validator(mode="after")
    def _paper_schedule_fits(self) -> Any:
        if self.p_low + self.p_gap >= 1:
            raise ValueError(
                f"p_gap: P_high = p_low + p_gap must be < 1, got {self.p_low} + {self.p_gap}"
            )
        if self.phase == "paper" and self.workload == "allreduce":
            raise ValueError(
                "phase: paper switches ε at epoch starts and an allreduce has no epochs; "
                "pin ε with --epsilon instead"
            )
        return self


def transport_knobs() -> dict[str, Any]:
    """A field for each knob the transport declares with help text (its own flags), with the
    knob's name, type, default and range."""
    return {
        k.name: (k.type, knob(k.default, TRANSPORT, k.help, **k.limits))
        for k in tconfig.knobs()
        if k.help
    }


_WithTransport: Any = create_model(
    "_WithTransport", __base__=_WorkerKnobs, __module__=__name__, **transport_knobs()
)


class WorkerSpec(_WithTransport):
    """One rank's workload and transport. Floats are finite (no inf/nan) and bounded."""

    def transport_config(self) -> tconfig.TransportConfig:
        """The transport's settings from this spec as played under its dilation D (pacing / D,
        t_max x D, the transport's own time constants x D): every knob the transport lets the
        worker set, by the spec field its declaration names."""
        given = {k.name: getattr(self, k.flag) for k in tconfig.knobs() if k.flag}
        return tconfig.TransportConfig.played(given, self.dilation)


def first_error(err: ValidationError) -> SpecError:
    """The first of pydantic's errors as a SpecError naming its field."""
    e = err.errors()[0]
    if e["loc"]:
        # the field, not the union member that failed (`dilation.constrained-float`)
        return SpecError(str(e["loc"][0]), e["msg"])
    # a cross-field rule: its message starts with the field it blames ("k: ...")
    field, _, msg = e["msg"].removeprefix("Value error, ").partition(": ")
    return SpecError(field, msg)


def validate(model: type[BaseModel], data: dict[str, Any]) -> Any:
    """`model.model_validate(data)`, raising SpecError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise first_error(e) from e


# ---- flags derived from the fields ---------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """One spec field as a command-line option."""

    name: str
    decls: tuple[str, ...]  # "--batch-size", then older names
    type: type  # int, float, str, Path or bool
    choices: tuple[str, ...] | None
    default: Any
    help: str
    panel: str


def _bounds(metadata: Iterable[Any]) -> str:
    """pydantic's limits as text: "> 0, <= 10"."""
    signs = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
    return ", ".join(
        f"{sign} {_number(getattr(m, attr))}"
        for m in metadata
        for attr, sign in signs
        if isinstance(m, annotated_types.BaseMetadata) and hasattr(m, attr)
    )


def _number(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def flags(model: type[BaseModel], names: Iterable[str] | None = None) -> list[Flag]:
    """The model's fields (or the named ones) as options, in `PANELS` order."""
    fields = model.model_fields
    out = []
    for name in names if names is not None else fields:
        info = fields[name]
        ann = info.annotation
        if get_origin(ann) in (Union, types.UnionType):
            given = [a for a in get_args(ann) if a is not type(None)]
            # a number or a word (`--dilation 4|auto`): pydantic parses the text
            ann = given[0] if len(given) == 1 else str
        choices = tuple(get_args(ann)) if get_origin(ann) is Literal else None
        extra = info.json_schema_extra or {}
        bounds = _bounds(info.metadata)
        out.append(
            Flag(
                name,
                ("--" + name.replace("_", "-"), *extra.get("aliases", ())),
                str if choices else ann,
                choices,
                info.default,
                (info.description or "") + (f" Range: {bounds}." if bounds else ""),
                extra.get("panel", OUTPUT),
            )
        )
    return sorted(out, key=lambda f: PANELS.index(f.panel))


def add_arguments(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    """One argparse option per field, grouped by panel; absent flags parse as None, so they
    do not override a spec file (see `from_arguments`)."""
    groups: dict[str, Any] = {}
    for f in flags(model):
        group = groups.get(f.panel) or groups.setdefault(
            f.panel, parser.add_argument_group(f.panel.lower())
        )
        shown = f" (default {f.default})" if f.default is not None else ""
        kw: dict[str, Any] = {"dest": f.name, "default": None, "help": f.help + shown}
        if f.type is bool:
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = f.type
            if f.choices:
                kw["choices"] = f.choices
        group.add_argument(*f.decls, **kw)


def from_arguments(
    model: type[BaseModel], args: argparse.Namespace, spec_file: Path | None = None
) -> Any:
    """The spec: `spec_file` (JSON) first, then every flag given; SpecError names the field."""
    data: dict[str, Any] = {}
    if spec_file is not None:
        try:
            data = model.model_validate_json(Path(spec_file).read_bytes()).model_dump()
        except OSError as e:
            raise SpecError("spec", f"{spec_file}: cannot read: {e.strerror}") from e
        except ValidationError as e:
            raise SpecError("spec", f"{spec_file}: {first_error(e)}") from e
    data.update({n: v for n in model.model_fields if (v := getattr(args, n, None)) is not None})
    return validate(model, data)
