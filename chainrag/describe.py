"""Describing registered components for people: parameters, types, defaults."""

from __future__ import annotations

import re
import typing
from typing import Any

import attrs

from chainrag.registry import REGISTRIES, Entry
from chainrag.structure import to_plain, unstructure

REQUIRED = "(required)"
_FACTORY: type = type(attrs.Factory(list))


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
    """``(stage, entries)`` for every stage (or one), in pipeline order."""
    return [(r.stage, list(r)) for r in REGISTRIES if stage in (None, r.stage)]
