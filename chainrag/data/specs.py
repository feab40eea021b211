"""What a JSON value must be: the field specs dataset records are checked against.

A spec (:class:`Spec`) says in words what it expects and yields every problem of a value as
(field, message); :class:`Is`, :class:`ListOf`, :class:`Pair`, :class:`Obj` and :class:`OneOf`
build them, and the fields every format shares (``TEXT``, ``ALIASES``, ``PASSAGE_OBJECT``…)
are defined here. The formats' own record specs are in :mod:`chainrag.data.formats`; reading a
file and checking its records in :mod:`chainrag.data.records`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import attrs


class Spec(Protocol):
    """What a JSON value must be: ``expected`` in words, ``problems`` as (field, message)."""

    @property
    def expected(self) -> str: ...

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]: ...


def shown(value: Any) -> str:
    """A JSON value as a message shows it: ``null``, ``42``, ``'Richland'``, ``a list``."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "an object" if value else "an empty object"
    text = repr(value)  # escapes lone surrogates and control characters
    return text if len(text) <= 40 else f"{text[:36]}...{text[-1]}"


def _mismatch(spec: Spec, value: Any) -> str:
    return f"expected {spec.expected}, got {shown(value)}"


def _join(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


@attrs.frozen
class Is:
    """A value for which ``test`` holds: a scalar, or a list checked as a whole."""

    expected: str
    test: Callable[[Any], bool]

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not self.test(value):
            yield field, _mismatch(self, value)


@attrs.frozen
class ListOf:
    """A list of at least ``min_items`` values, each matching ``item``."""

    item: Spec
    expected: str
    min_items: int = 0

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not isinstance(value, list) or len(value) < self.min_items:
            yield field, _mismatch(self, value)
            return
        for i, item in enumerate(value):
            yield from self.item.problems(item, f"{field}[{i}]")


@attrs.frozen
class Pair:
    """A two-item list such as HotpotQA's ``[title, [sentences]]``."""

    first: Spec
    second: Spec
    expected: str

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not isinstance(value, list) or len(value) != 2:
            yield field, _mismatch(self, value)
            return
        yield from self.first.problems(value[0], f"{field}[0]")
        yield from self.second.problems(value[1], f"{field}[1]")


@attrs.frozen
class Obj:
    """A JSON object with ``required`` and ``optional`` fields; other fields are not read."""

    expected: str
    required: Mapping[str, Spec]
    optional: Mapping[str, Spec] = attrs.field(factory=dict)

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        if not isinstance(value, dict):
            yield field, _mismatch(self, value)
            return
        for name, spec in (*self.required.items(), *self.optional.items()):
            if name in value:
                yield from spec.problems(value[name], _join(field, name))
            elif name in self.required:
                yield _join(field, name), f"missing (expected {spec.expected})"


@attrs.frozen
class OneOf:
    """A value matching one of ``options``; a mismatch reports what is wrong inside the option
    of the value's own shape (an object or a list), else that none of them fits."""

    options: tuple[Spec, ...]
    expected: str

    def problems(self, value: Any, field: str) -> Iterator[tuple[str, str]]:
        found = [list(option.problems(value, field)) for option in self.options]
        if all(found):
            inside = [f for f in found if all(where != field for where, _ in f)]
            yield from inside[0] if inside else [(field, _mismatch(self, value))]


def is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sentences(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(s, str) for s in value)
        and any(s.strip() for s in value)
    )


STRING = Is("a string", lambda v: isinstance(v, str))
TEXT = Is("a non-empty string", is_text)
BOOLEAN = Is("true or false", lambda v: isinstance(v, bool))
INDEX = Is("an integer >= 0", lambda v: is_integer(v) and v >= 0)
KEY = Is("a non-empty string or an integer", lambda v: is_text(v) or is_integer(v))
ALIASES = ListOf(TEXT, "a list of strings")
SENTENCES = Is("a list of sentences (strings, not all empty)", _sentences)
TITLED_SENTENCES = Pair(STRING, SENTENCES, "[title, [sentences]]")
PASSAGE_OBJECT = Obj("a {title, text} object", {"text": TEXT}, {"title": STRING})
CONTEXT_ITEM = OneOf((PASSAGE_OBJECT, TITLED_SENTENCES), "{title, text} or [title, [sentences]]")
