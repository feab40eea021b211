"""A recipe's ``base:`` chain: the files it extends, where they may come from, and how they
merge (mappings key by key; lists, scalars and ``null`` replace; a component whose ``kind``
changes is replaced whole). Each file of a chain is read once.

A base is a path relative to the file that names it (``../chainrag/ansint.yaml``), or a
recipe's name (``chainrag/ansint``: no ``.yaml`` suffix, not absolute), which is
``NAME.yaml`` in the first of :func:`recipe_roots` that has it, so that a recipe over a shipped
one works saved in any folder.

Layer: recipes.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.errors import RecipeError
from chainrag.recipes.structure import describe, type_name
from chainrag.recipes.yaml_file import MAX_BYTES, parse_yaml
from chainrag.recipes.yaml_file import recipe_error as _error

ROOTS_ENV = "CHAINRAG_RECIPE_ROOTS"
"""More folders ``base:`` files may come from (separated by ``os.pathsep``)."""
SHIPPED_RECIPES = Path(__file__).resolve().parents[2] / "recipes"
"""The repository's own ``recipes/`` folder (when chainrag runs from a checkout)."""
MAX_BASE_DEPTH = 32
"""A ``base:`` chain is at most this many files long."""
SUFFIXES = (".yaml", ".yml")
"""A recipe file's suffixes; a base ending in neither is a recipe's name."""
NAME_DEPTH = 3
"""How many folders deep a root is searched for the names a did-you-mean offers."""


def merge(base: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``child`` over ``base``: mappings merge, anything else replaces.

    A ``null`` replaces too, so it means what it means in a recipe without ``base:``
    (structuring reads it: a component set to null is none, a mapping entry set to null is
    no entry; a key that cannot be null is an error). Deleting the key instead would bring
    back its default — ``summarizer: null`` over a base that names one would summarize.
    Two mappings whose ``kind`` differ are different components: the child's replaces the
    base's whole, so parameters of the old kind do not leak into the new one.
    """
    out = dict(base)
    for key, value in child.items():
        old = out.get(key)
        if (
            isinstance(old, Mapping)
            and isinstance(value, Mapping)
            and not _kind_changes(old, value)
        ):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def _kind_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return "kind" in new and new.get("kind") != old.get("kind")


def recipe_tree(recipe: Path) -> Path:
    """The tree a recipe file's ``base:`` files must stay in (``recipe`` resolved already).

    That is the nearest folder above the file named ``recipes`` (so that
    ``recipes/ablations/k1.yaml`` may extend ``../chainrag/ansint.yaml``), else its own folder.
    """
    return next((parent for parent in recipe.parents if parent.name == "recipes"), recipe.parent)


def recipe_roots(recipe: Path, extra: Iterable[str | Path] = ()) -> tuple[Path, ...]:
    """Every folder ``base:`` files may come from for a top recipe file ``recipe`` (resolved):
    its :func:`recipe_tree`, the folders in ``extra`` and in ``$CHAINRAG_RECIPE_ROOTS``, and
    the repository's own ``recipes/`` folder."""
    listed = [*extra, *(p for p in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if p)]
    roots = [recipe_tree(recipe), *(_real(Path(p), ROOTS_ENV) for p in listed)]
    if SHIPPED_RECIPES.is_dir():
        roots.append(SHIPPED_RECIPES)
    return tuple(dict.fromkeys(roots))


def _real(path: Path, where: str, source: str | None = None, shown: str = "") -> Path:
    """``path`` resolved (symlinks followed); a path the system refuses is a RecipeError
    (naming the path as ``shown``, by default ``path``)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # too long, a symlink loop, a NUL
        raise _unusable(shown or str(path), exc, where, source) from None


def _unusable(shown: str, exc: Exception, where: str, source: str | None) -> RecipeError:
    reason = getattr(exc, "strerror", None) or str(exc)
    return _error(where, f"unusable path {describe(shown)}: {reason}", source)


def resolve(path: str | Path, roots: Iterable[str | Path] = ()) -> dict[str, Any]:
    """Read a recipe file and everything it extends into one mapping (not yet structured).

    Each file is read once however often the chain names it. ``base:`` files must lie inside
    :func:`recipe_roots` (the recipe's tree, ``roots``, ``$CHAINRAG_RECIPE_ROOTS``, the
    repository's ``recipes/``); a base elsewhere is an error that does not read the file.
    """
    top, label = Path(path), str(path)
    resolver = _Resolver(recipe_roots(_real(top, label), roots))
    return resolver.read(top, label, ())


@attrs.define
class _Resolver:
    """Resolves one recipe's ``base:`` chain, reading each file once (by its real path)."""

    roots: tuple[Path, ...]
    done: dict[Path, dict[str, Any]] = attrs.field(factory=dict)

    def read(self, path: Path, label: str, chain: tuple[Path, ...]) -> dict[str, Any]:
        real = _real(path, label)
        if real in chain:
            cycle = " -> ".join(str(p) for p in (*chain, real))
            raise _error(f"{label}.base", f"base cycle: {cycle}", label)
        if len(chain) > MAX_BASE_DEPTH:
            raise _error(f"{label}.base", f"base chain longer than {MAX_BASE_DEPTH} files", label)
        if real not in self.done:
            self.done[real] = self._resolve(path, label, (*chain, real))
        return self.done[real]

    def _resolve(self, path: Path, label: str, chain: tuple[Path, ...]) -> dict[str, Any]:
        data = _read_mapping(path, label)
        bases = data.get("base", [])
        merged: dict[str, Any] = {}
        for i, base in enumerate(_base_list(bases, label)):
            where = f"{label}.base" if isinstance(bases, str) else f"{label}.base[{i}]"
            base_path = self._base_path(path.parent, base, where, label)
            parent = self.read(base_path, str(base_path), chain)
            merged = merge(merged, {k: v for k, v in parent.items() if k != "name"})
        resolved = merge(merged, {k: v for k, v in data.items() if k != "base"})
        resolved.setdefault("name", path.stem)
        return resolved

    def _base_path(self, folder: Path, base: str, where: str, label: str) -> Path:
        """The file ``base`` names, once it is known to be a file inside the allowed roots:
        ``folder / base``, or the recipe named ``base`` (see :func:`is_recipe_name`)."""
        if is_recipe_name(base, folder):
            return self._named(base, where, label)
        base_path = folder / base
        real = _real(base_path, where, label, shown=base)
        if not any(real.is_relative_to(root) for root in self.roots):
            roots = ", ".join(map(str, self.roots))
            raise _error(
                where,
                f"base recipe {describe(base)} is outside the recipe tree and the allowed "
                f"roots ({roots}); add its folder to ${ROOTS_ENV} to allow it",
                label,
            )
        if not _is_file(base_path, where, label, shown=base):
            hint = _did_you_mean(base, self.roots)
            raise _error(where, f"base recipe not found: {base_path}{hint}", label)
        return base_path

    def _named(self, name: str, where: str, label: str) -> Path:
        """The recipe named ``name``: ``ROOT/NAME.yaml`` (or ``.yml``) in the first root that
        has it, never a file outside that root."""
        for root in self.roots:
            for suffix in SUFFIXES:
                path = root / f"{name}{suffix}"
                real = _real(path, where, label, shown=name)
                if real.is_relative_to(root) and _is_file(path, where, label, shown=name):
                    return path
        roots = ", ".join(map(str, self.roots))
        hint = _did_you_mean(name, self.roots)
        raise _error(where, f"no recipe named {describe(name)} in {roots}{hint}", label)


def is_recipe_name(base: str, folder: Path) -> bool:
    """Whether ``base`` (named by a file in ``folder``) is a recipe's name rather than a path:
    not absolute, no ``.yaml``/``.yml`` suffix, and no such file beside the recipe (a relative
    path to a file without the suffix keeps meaning that file)."""
    if Path(base).is_absolute() or base.endswith(SUFFIXES):
        return False
    try:
        return not (folder / base).is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte: the lookup reports it
        return True


def recipe_names(roots: Iterable[Path]) -> list[str]:
    """The names of the recipe files under ``roots``, at most :data:`NAME_DEPTH` folders deep
    (``chainrag/ansint`` for ``ROOT/chainrag/ansint.yaml``)."""
    names: dict[str, None] = {}
    for root in roots:
        for depth in range(NAME_DEPTH + 1):
            for suffix in SUFFIXES:
                for path in sorted(root.glob("*/" * depth + "*" + suffix)):
                    names[path.relative_to(root).with_suffix("").as_posix()] = None
    return list(names)


def _did_you_mean(base: str, roots: Iterable[Path]) -> str:
    """``; did you mean base: chainrag/ansint?`` for a base that ends in a recipe's name or is
    close to one (``recipes/chainrag/ansint.yaml``, ``chainrag/ansnt``), else nothing."""
    key = base.replace("\\", "/")
    for suffix in SUFFIXES:
        key = key.removesuffix(suffix)
    names = recipe_names(roots)
    ending = [n for n in names if key == n or key.endswith("/" + n)]
    close = [max(ending, key=len)] if ending else difflib.get_close_matches(key, names, n=1)
    return f"; did you mean base: {close[0]}?" if close else ""


def _base_list(bases: Any, label: str) -> list[str]:
    bases = [bases] if isinstance(bases, str) else bases
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise _error(
            f"{label}.base", "expected a path or a recipe's name, or a list of them", label
        )
    return bases


def _is_file(path: Path, where: str, source: str, shown: str = "") -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise _unusable(shown or str(path), exc, where, source) from None


def _read_mapping(path: Path, label: str) -> dict[str, Any]:
    """One recipe file parsed: a mapping, or a RecipeError that never quotes the file."""
    if not _is_file(path, label, label):
        raise _error(label, "recipe file not found")
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _error(label, f"cannot read the recipe file: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise _error(label, f"recipe file larger than {MAX_BYTES // 1024} KiB")
    data = parse_yaml(_decode(raw, label), label)
    if not isinstance(data, dict):
        raise _error(label, f"expected a mapping at the top, got {type_name(data)}")
    return data


def _decode(raw: bytes, label: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _error(
            label, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} (save as UTF-8)"
        ) from None
