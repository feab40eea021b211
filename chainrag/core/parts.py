"""One walk over a recipe's components: every attrs value inside a value, with its path.

What looks inside a recipe for components of some sort walks it this way: the encoders whose
device is resolved and recorded (:mod:`chainrag.core.device`), the trained files a cache key
must name (:func:`chainrag.index.build.file_identities`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs


def parts(value: object, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every attrs instance inside ``value`` (itself first, then depth first in field order),
    with its path from ``path`` (``index.embedder``, ``method.integrators[1]``,
    ``index.edges.ss``): through attrs fields, tuples, lists and mappings."""
    if attrs.has(type(value)):
        yield path, value
        for field in attrs.fields(type(value)):  # type: ignore[arg-type]
            yield from parts(getattr(value, field.name), _join(path, field.name))
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from parts(item, f"{path}[{i}]")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from parts(item, _join(path, str(key)))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
