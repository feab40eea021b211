"""Checking recipe files as ``chainrag validate`` does: a typed result per file and in all.

    found = validate_paths([Path("recipes")])
    found.ok, found.summary()  # (True, "42 of 42 recipes valid")

Each file is checked by :func:`chainrag.recipes.recipe.check_recipe`, which imports no plugin unless
asked: a file is ``ok``, ``part`` (components only a plugin not loaded might provide went
unchecked; not a failure) or ``fail`` (every problem in one message, each with its path).

Layer: recipes and registry. May import types, errors, the registry and recipes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import attrs

from chainrag.core.errors import ChainragError, Problem
from chainrag.recipes.recipe import check_recipe, recipe_files

State = Literal["ok", "part", "fail"]


def notes(unchecked: Iterable[Problem]) -> str:
    """The parts of a recipe left unchecked, one ``\\n  - problem`` line each."""
    return "".join(f"\n  - {p}" for p in unchecked)


@attrs.frozen
class FileCheck:
    """One recipe file as validation found it.

    Attributes:
        state: ``ok``, ``part`` (not fully checked) or ``fail``.
        name: The recipe's name (empty when it failed).
        error: Why it failed: every problem, each with its path.
        unchecked: What went unchecked (``part``).
    """

    path: Path
    state: State
    name: str = ""
    error: str = ""
    unchecked: tuple[Problem, ...] = ()

    def line(self) -> str:
        """The file's line in ``chainrag validate``'s output."""
        if self.state == "fail":
            return f"FAIL {self.error}"
        if self.state == "part":
            return f"part {self.path} ({self.name}): not fully checked{notes(self.unchecked)}"
        return f"ok   {self.path} ({self.name})"


def check_file(path: Path, *, load_plugins: bool = False) -> FileCheck:
    """Check one recipe file; a refused file is a ``fail`` result, not an exception."""
    try:
        checked = check_recipe(path, load_plugins=load_plugins)
    except ChainragError as exc:
        return FileCheck(path, "fail", error=str(exc))
    state: State = "part" if checked.unchecked else "ok"
    return FileCheck(path, state, checked.name, unchecked=checked.unchecked)


@attrs.frozen
class Validation:
    """The recipe files found under some paths, each checked, and the paths that do not exist."""

    paths: tuple[Path, ...]
    files: tuple[FileCheck, ...]
    missing: tuple[Path, ...]

    @property
    def failed(self) -> int:
        return sum(f.state == "fail" for f in self.files)

    @property
    def partial(self) -> int:
        return sum(f.state == "part" for f in self.files)

    @property
    def ok(self) -> bool:
        """No file failed, no path is missing and there was something to check."""
        return bool(self.files) and not self.failed and not self.missing

    def summary(self) -> str:
        """``N of M recipes valid``, with the partly checked files and the missing paths."""
        part, missing = self.partial, len(self.missing)
        return (
            f"{len(self.files) - self.failed} of {len(self.files)} recipes valid"
            + (f" ({part} only partly checked: pass --load-plugins)" if part else "")
            + (f"; {missing} paths missing" if missing else "")
        )


def validate_paths(paths: Sequence[Path], *, load_plugins: bool = False) -> Validation:
    """Check every recipe file ``paths`` name: files as given, folders searched for
    ``*.yaml``/``*.yml`` (:func:`chainrag.recipes.recipe.recipe_files`)."""
    found = [f for f in recipe_files(paths) if f.exists()]
    missing = tuple(p for p in paths if not p.exists())
    files = tuple(check_file(f, load_plugins=load_plugins) for f in found)
    return Validation(tuple(paths), files, missing)
