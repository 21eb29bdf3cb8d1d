"""Typer options generated from the spec's fields: one flag per field, with its help, panel,
choices and default, so a new spec field is a new flag without another declaration.

Every generated option parses to None when absent, so a flag overrides `--config` only when
given; `--help` shows the spec's default instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, Literal

import typer
from pydantic import BaseModel

from workloads.spec import Flag, flags


def _option(f: Flag) -> inspect.Parameter:
    decls = f.decls
    if f.type is bool:
        decls = tuple(f"{d}/--no-{d.removeprefix('--')}" for d in decls)
    option = typer.Option(
        None,
        *decls,
        help=f.help,
        rich_help_panel=f.panel,
        show_default=str(f.default) if f.default is not None else False,
    )
    annotation = Literal[f.choices] if f.choices else f.type
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option,
                             annotation=annotation)  # fmt: skip


def spec_options(
    model: type[BaseModel], names: Iterable[str] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a command taking `**fields`: one option per field of `model` (or the named
    ones) in panel order, then the command's own parameters. It gets every field by name."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        own = [
            p
            for p in inspect.signature(command).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        command.__signature__ = inspect.Signature(
            [_option(f) for f in flags(model, names)] + params
        )
        return command

    return decorate
