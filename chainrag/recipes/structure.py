"""The strict cattrs converter behind recipes: typed, exact, and exhaustive in its errors.

What it adds to cattrs' defaults:

* strict scalars: ``7.9`` is not an int, ``7`` is a float, a string is not a bool, a bool is
  not an int, and nothing is silently coerced;
* lists are lists (a string is never read as a sequence of characters), mappings are mappings;
* extra keys are errors, with "did you mean" for near misses;
* a field typed by a stage Protocol is read as ``{kind: <registry key>, **parameters}`` and
  built through that stage's registry;
* errors collected per field, turned into :class:`~chainrag.core.errors.Problem` records with paths.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)

from chainrag.core.device import PLACEMENT
from chainrag.core.endpoint import REACH
from chainrag.core.errors import ChainragError, Problem, UnknownComponentError
from chainrag.recipes.registry import REGISTRIES, Registry, registered_key


class InvalidValueError(ChainragError, ValueError):
    """A value of the wrong type or out of range, described for a person."""


_SHOWN = 80
"""At most this many characters of a value are quoted in an error message."""


def describe(value: object) -> str:
    """How a value is named in an error message: ``7.9``, ``'no'``, ``a list``.

    A long value is cut to its first characters, so an error never echoes a whole file.
    """
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "null"
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else f"{shown[: _SHOWN - 5]}...{shown[-1]} (cut)"


def type_name(value: object) -> str:
    """What kind of value this is, without quoting it: ``a string``, ``an integer``."""
    if isinstance(value, Mapping | list | tuple) or value is None:
        return describe(value)
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    return names.get(type(value), f"a YAML {type(value).__name__}")


_SCALARS: dict[type, tuple[str, Callable[[object], bool]]] = {
    int: ("an integer", lambda v: type(v) is int),
    float: ("a number", lambda v: type(v) in (int, float)),
    str: ("a string", lambda v: type(v) is str),
    bool: ("a boolean (true or false)", lambda v: type(v) is bool),
}


def _scalar_hook(kind: type) -> Callable[[object, type], object]:
    name, accepts = _SCALARS[kind]

    def hook(value: object, _: type) -> object:
        if not accepts(value):
            raise InvalidValueError(f"expected {name}, got {describe(value)}")
        return float(value) if kind is float else value  # type: ignore[arg-type]

    return hook


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _literal_hook(value: object, t: Any) -> object:
    allowed = get_args(t)
    for option in allowed:
        if type(option) is type(value) and option == value:
            return value
    listed = ", ".join(repr(a) for a in allowed)
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value, [a for a in allowed if isinstance(a, str)], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InvalidValueError(f"expected one of {listed}, got {describe(value)}{hint}")


def _is_sequence(t: Any) -> bool:
    origin = get_origin(t)
    return origin in (tuple, list) and (origin is list or get_args(t)[-1:] == (Ellipsis,))


def _is_mapping(t: Any) -> bool:
    return get_origin(t) in (dict, Mapping, typing.Mapping)


def _iterable_error(errors: list[Exception], t: Any) -> IterableValidationError:
    return IterableValidationError(f"while structuring {t}", errors, t)


def _sequence_hook(conv: cattrs.Converter) -> Callable[[object, Any], object]:
    def hook(value: object, t: Any) -> object:
        if not isinstance(value, list | tuple):
            raise InvalidValueError(f"expected a list, got {describe(value)}")
        item_type = get_args(t)[0]
        out, errors = [], []
        for i, item in enumerate(value):
            try:
                out.append(conv.structure(item, item_type))
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"item {i}", i, item_type))
                errors.append(exc)
        if errors:
            raise _iterable_error(errors, t)
        return tuple(out) if get_origin(t) is tuple else out

    return hook


def _mapping_hook(conv: cattrs.Converter) -> Callable[[object, Any], object]:
    """A mapping's structure hook: a null mapping is empty and a null entry is no entry
    (``edges: {ec: null}``: no EC layer), so a recipe can drop what its base sets."""

    def hook(value: object, t: Any) -> object:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise InvalidValueError(f"expected a mapping, got {describe(value)}")
        key_type, value_type = get_args(t) or (str, Any)
        out, errors = {}, []
        for k, v in value.items():
            if v is None:
                continue
            try:
                out[conv.structure(k, key_type)] = conv.structure(v, value_type)
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"key {k!r}", str(k), value_type))
                errors.append(exc)
        if errors:
            raise _iterable_error(errors, t)
        return out

    return hook


def _attrs_hook_factory(conv: cattrs.Converter) -> Callable[[type], Callable[[object, type], Any]]:
    def factory(cl: type) -> Callable[[object, type], Any]:
        generated: Callable[[Any, Any], Any] = cattrs.gen.make_dict_structure_fn(
            cl, conv, _cattrs_forbid_extra_keys=True
        )

        def hook(value: object, t: type) -> Any:
            if not isinstance(value, Mapping):
                raise InvalidValueError(f"expected a mapping, got {describe(value)}")
            try:
                return generated(value, t)
            except (ClassValidationError, IterableValidationError, ForbiddenExtraKeysError):
                raise
            except (ValueError, TypeError) as exc:  # raised by the class's own validators
                raise ClassValidationError(f"while structuring {cl.__name__}", [exc], cl) from None

        return hook

    return factory


def _with_field_note(exc: Exception, name: str, t: Any, cl: type) -> ClassValidationError:
    exc.add_note(AttributeValidationNote(f"structuring {name}", name, t))
    return ClassValidationError(f"while structuring {cl.__name__}", [exc], cl)


def _component_hook(conv: cattrs.Converter, reg: Registry[Any]) -> Callable[[object, Any], Any]:
    def hook(value: object, t: Any) -> Any:
        if not isinstance(value, Mapping):
            raise InvalidValueError(
                f"expected {_article(reg.stage)} {reg.stage} as a mapping {{kind: ...}}, "
                f"got {describe(value)}"
            )
        if "kind" not in value:
            known = ", ".join(reg.keys())
            raise _with_field_note(
                KeyError(f"missing 'kind': which {reg.stage} (known: {known})"), "kind", str, t
            )
        kind = value["kind"]
        if type(kind) is not str:
            raise _with_field_note(
                InvalidValueError(f"expected a string, got {describe(kind)}"), "kind", str, t
            )
        try:
            entry = reg.get(kind)
        except UnknownComponentError as exc:
            raise _with_field_note(exc, "kind", str, t) from None
        params = {k: v for k, v in value.items() if k != "kind"}
        return conv.structure(params, entry.cls)

    return hook


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _unstructure_component(
    conv: cattrs.Converter, placement: bool
) -> Callable[[Any], dict[str, Any]]:
    def hook(obj: Any) -> dict[str, Any]:
        found = registered_key(type(obj))
        assert found is not None
        fields = {
            f.name: conv.unstructure(getattr(obj, f.name))
            for f in attrs.fields(type(obj))
            if placement or not (f.metadata.get(PLACEMENT) or f.metadata.get(REACH))
        }
        return {"kind": found[1], **fields}

    return hook


def make_converter(placement: bool = True) -> cattrs.Converter:
    """A new strict converter that knows every stage registry; with ``placement`` False its
    components unstructure without their placement fields (``device``) and a remote encoder's
    access fields (:data:`~chainrag.core.endpoint.REACH`)."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for scalar in _SCALARS:
        conv.register_structure_hook(scalar, _scalar_hook(scalar))
    conv.register_structure_hook_func(_is_literal, _literal_hook)
    conv.register_structure_hook_func(_is_sequence, _sequence_hook(conv))
    conv.register_structure_hook_func(_is_mapping, _mapping_hook(conv))
    conv.register_structure_hook_factory(attrs.has, _attrs_hook_factory(conv))
    for reg in REGISTRIES:
        conv.register_structure_hook_func(_identity(reg.protocol), _component_hook(conv, reg))
    conv.register_unstructure_hook_func(
        lambda cl: isinstance(cl, type) and registered_key(cl) is not None,
        _unstructure_component(conv, placement),
    )
    return conv


def _identity(t: type) -> Callable[[Any], bool]:
    return lambda candidate: candidate is t


CONVERTER = make_converter()
_IDENTITY = make_converter(placement=False)


def to_plain(value: Any) -> Any:
    """Tuples → lists, recursively, so the value dumps as YAML or JSON."""
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def unstructure(obj: Any) -> Any:
    """A recipe object (or component) as plain YAML/JSON data."""
    return to_plain(CONVERTER.unstructure(obj))


def identity(obj: Any) -> Any:
    """A recipe object (or component) as plain data, as far as what it computes goes: fields
    that only say where it runs (``device``) or how a remote encoder's endpoint is reached
    (``api_base``, ``concurrency``, ``timeout_s``, ``max_retries``, its pacing) left out.
    Digests and cache keys are made of this, so a recipe has one digest on a laptop and on a
    GPU machine, and keys made before such a field existed stay valid; a cache key adds the
    remote encoders' endpoint identities (:func:`chainrag.index.stores.endpoint_identities`)."""
    return to_plain(_IDENTITY.unstructure(obj))


# --------------------------------------------------------------------------- problems


def problems(exc: BaseException, path: str) -> list[Problem]:
    """Every leaf problem in a cattrs error tree, each with its path from ``path``."""
    return [p for where, leaf in leaves(exc, path) for p in leaf_problems(leaf, where)]


def leaves(exc: BaseException, path: str) -> list[tuple[str, BaseException]]:
    """The leaf exceptions of a cattrs error tree, each with its path from ``path``."""
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        out = [leaf for e, n in with_notes for leaf in leaves(e, f"{path}.{n.name}")]
        return out + [leaf for e in without for leaf in leaves(e, path)]
    if isinstance(exc, IterableValidationError):
        with_notes_i, without_i = exc.group_exceptions()
        out = [leaf for e, n in with_notes_i for leaf in leaves(e, _index_path(path, n.index))]
        return out + [leaf for e in without_i for leaf in leaves(e, path)]
    return [(path, exc)]


def leaf_problems(exc: BaseException, path: str) -> list[Problem]:
    """The problems one leaf exception stands for (an extra-keys error: one per key)."""
    if isinstance(exc, ForbiddenExtraKeysError):
        known = sorted(f.name for f in attrs.fields(exc.cl))
        return [
            Problem(f"{path}.{key}", _unknown_key_message(key, known))
            for key in sorted(exc.extra_fields, key=str)
        ]
    return [Problem(path, _message(exc))]


def _index_path(path: str, index: int | str) -> str:
    if isinstance(index, int):
        return f"{path}[{index}]"
    short = len(index) <= _SHOWN
    return f"{path}.{index}" if index.isidentifier() and short else f"{path}[{describe(index)}]"


def _unknown_key_message(key: object, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1) if isinstance(key, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(known) if known else "none"
    return f"unknown key {describe(key)}{hint} (known keys: {listed})"


def _message(exc: BaseException) -> str:
    if isinstance(exc, InvalidValueError | UnknownComponentError):
        return str(exc)
    if isinstance(exc, KeyError):
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, str) and detail.startswith("missing"):
            return detail
        return "required key missing"
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)
