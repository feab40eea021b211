"""Recipe YAML read safely: a ``yaml.SafeLoader`` with YAML 1.2 booleans, duplicate keys as
errors, short integers, and limits on size, depth and aliases; whatever is wrong is a
:class:`~chainrag.core.errors.RecipeError` naming the file and the line.

Layer: recipes.
"""

from __future__ import annotations

from typing import Any

import yaml

from chainrag.core.errors import Problem, RecipeError
from chainrag.recipes.structure import describe

MAX_BYTES = 1 << 20
"""A recipe file holds at most 1 MiB."""
MAX_DEPTH = 64
"""Values nest at most this deep (the repository's recipes nest 5 levels)."""
MAX_VALUES = 100_000
"""A file holds at most this many values once YAML aliases are expanded (no alias bombs)."""
MAX_INT_CHARS = 100
"""An integer is written in at most this many characters (Python refuses 4,300 digits)."""


def recipe_error(where: str, message: str, source: str | None = None) -> RecipeError:
    """A :class:`RecipeError` of one problem at ``where``, in the file ``source`` (default:
    ``where``)."""
    return RecipeError(source or where, [Problem(where, message)])


_error = recipe_error


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 booleans, duplicate keys as errors, short integers.

    YAML 1.1 reads ``no``, ``off`` and ``y`` as booleans (the "Norway problem"); recipes take
    only ``true``/``false``. A key given twice in one mapping is an error, not a silent override.
    A value SafeLoader's constructors fail on with a Python error (``!!bool maybe`` raises
    KeyError, ``!!timestamp x`` AttributeError, ``!!int ""`` IndexError) is a YAML error at
    its line.
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError, MemoryError):
            raise
        except Exception as exc:
            what = describe(node.value) if isinstance(node, yaml.ScalarNode) else "this value"
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            why = f": {exc}" if isinstance(exc, ValueError) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {what} as {tag}{why}", node.start_mark
            ) from None


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    __import__("re").compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            continue  # unhashable; SafeLoader reports it
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {describe(key)} (line {mark.line + 1})", mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    if len(text) > MAX_INT_CHARS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer {len(text)} characters long (at most {MAX_INT_CHARS})",
            node.start_mark,
        )  # fmt: skip
    return loader.construct_yaml_int(node)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def parse_yaml(text: str, source: str) -> Any:
    """Parse recipe YAML safely; whatever is wrong becomes a :class:`RecipeError`.

    Beyond YAML syntax errors (reported with their line), the value must nest at most
    :data:`MAX_DEPTH` levels, hold at most :data:`MAX_VALUES` values with aliases expanded,
    have no alias inside itself, no integer over :data:`MAX_INT_CHARS` characters and no
    string that is not valid Unicode (a lone surrogate such as ``"\\ud800"``).
    """
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise _error(source, f"invalid YAML{where}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise _error(source, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise _error(source, f"invalid YAML: nested more than {MAX_DEPTH} levels deep") from None
    _measure(data, 0, {}, set(), source)
    return data


def _measure(
    node: Any, depth: int, seen: dict[int, tuple[int, int]], open_: set[int], source: str
) -> tuple[int, int]:
    """``(values, height)`` of ``node`` with aliases expanded; raises past the limits."""
    if depth > MAX_DEPTH:
        raise _error(source, f"nested more than {MAX_DEPTH} levels deep")
    if not isinstance(node, dict | list | tuple | set):
        _check_scalar(node, source)
        return 1, 0
    if id(node) in open_:
        raise _error(source, "a YAML alias refers to a value that holds it")
    if id(node) not in seen:
        open_.add(id(node))
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else list(node)
        parts = [_measure(child, depth + 1, seen, open_, source) for child in children]
        open_.discard(id(node))
        seen[id(node)] = (1 + sum(n for n, _ in parts), 1 + max((h for _, h in parts), default=0))
    values, height = seen[id(node)]
    if depth + height > MAX_DEPTH:
        raise _error(source, f"nested more than {MAX_DEPTH} levels deep")
    if values > MAX_VALUES:
        raise _error(source, f"more than {MAX_VALUES:,} values once YAML aliases are expanded")
    return values, height


def _check_scalar(value: Any, source: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(value[exc.start])
            raise _error(
                source, f"a string holds \\u{code:04x}, which is not valid Unicode"
            ) from None
