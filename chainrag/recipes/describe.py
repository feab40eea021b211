"""Describing registered components for people: parameters, types, defaults."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Sequence
from typing import Any

import attrs

from chainrag.core.errors import ChainragError
from chainrag.recipes.registry import REGISTRIES, Entry
from chainrag.recipes.structure import to_plain, unstructure

REQUIRED = "(required)"
_FACTORY: type = type(attrs.Factory(list))


class UnknownStageError(ChainragError):
    """No registry has this stage; the message lists the stages."""


@attrs.frozen
class Param:
    """One parameter of a component: name, type as written in a recipe, default."""

    name: str
    type: str
    default: Any


def type_name(t: Any) -> str:
    """A type as a person reads it: ``int``, ``tuple[str, ...]``, ``Literal['a', 'b']``."""
    if isinstance(t, type) and not typing.get_args(t):
        return t.__name__
    text = str(t)
    text = re.sub(r"\b(?:typing|collections\.abc|chainrag\.[a-z_.]+)\.", "", text)
    return text.replace("NoneType", "None")


def params(cls: type) -> tuple[Param, ...]:
    """The parameters of an attrs component class, in declaration order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in attrs.fields(cls):
        if f.default is attrs.NOTHING:
            default: Any = REQUIRED
        elif isinstance(f.default, _FACTORY):
            default = to_plain(unstructure(typing.cast(Any, f.default).factory()))
        else:
            default = to_plain(unstructure(f.default))
        out.append(Param(f.name, type_name(hints[f.name]), default))
    return tuple(out)


def catalogue(stage: str | None = None) -> list[tuple[str, list[Entry]]]:
    """``(stage, entries)`` for every stage (or one), in pipeline order; an unknown stage is an
    :class:`UnknownStageError` listing the stages."""
    stages = [r.stage for r in REGISTRIES]
    if stage is not None and stage not in stages:
        raise UnknownStageError(f"unknown stage {stage!r}; stages: {', '.join(stages)}")
    return [(r.stage, list(r)) for r in REGISTRIES if stage in (None, r.stage)]


def catalogue_data(stage: str | None = None) -> dict[str, dict[str, Any]]:
    """The catalogue as plain data, ``{stage: {key: {summary, params: [{name, type,
    default}]}}}``: what ``chainrag components --json`` prints."""
    return {
        name: {
            e.key: {
                "summary": e.summary,
                "params": [
                    {"name": p.name, "type": p.type, "default": p.default} for p in params(e.cls)
                ],
            }
            for e in entries
        }
        for name, entries in catalogue(stage)
    }


def entry_lines(entries: Sequence[Entry]) -> list[str]:
    """A stage's components as ``chainrag components`` lists them under the stage: each key
    with its summary, then each parameter with its type and default (JSON)."""
    if not entries:
        return ["  (none yet)"]
    lines = []
    for e in entries:
        lines.append(f"  {e.key}: {e.summary}")
        for p in params(e.cls):
            shown = p.default if p.default == REQUIRED else json.dumps(p.default)
            lines.append(f"      {p.name}: {p.type} = {shown}")
    return lines
