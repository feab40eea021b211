"""Changes to a recipe from the command line: ``--set PATH=VALUE`` and ``--llm NAME``.

    data = apply(resolve("recipes/chainrag/ansint.yaml"),
                 parse_all(["retrieval.seed.k=5"]), llm="gpt-4o-mini")
    recipe = structure(data, "recipes/chainrag/ansint.yaml")

``--set retrieval.seed.k=5`` is the recipe with that one value changed: PATH is the dotted path
of a field (``llm.temperature``, ``index.edges.ss.m``), VALUE is read as YAML (``5`` an int,
``null`` none, ``{kind: none}`` a component, ``"5"`` a string), and the result is merged over
the resolved recipe as a last ``base:`` would be — a mapping merges key by key, a component of
another ``kind`` replaces the old one whole — then typed and checked like the file, so a wrong
value is an error naming it. ``--llm NAME`` puts the ``llm:`` section of one of
``recipes/llms/`` (``gpt-4o-mini``, ``glm-4-plus``, ``qwen-plus``…; or the path of any recipe
file) over the recipe's, before the ``--set`` changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.errors import Problem, RecipeError
from chainrag.recipes.listing import RECIPES
from chainrag.recipes.recipe import Checked, Recipe, check, merge, parse_yaml, resolve, structure

LLMS = RECIPES / "llms"
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


@attrs.frozen
class Override:
    """One ``--set PATH=VALUE``: the field's path, the value read as YAML, and the text."""

    path: tuple[str, ...]
    value: Any
    text: str

    def nested(self) -> dict[str, Any]:
        """The change as a mapping: ``{"retrieval": {"seed": {"k": 5}}}``."""
        value: Any = self.value
        for key in reversed(self.path):
            value = {key: value}
        return dict(value)


def parse_override(text: str) -> Override:
    """``PATH=VALUE`` read; a RecipeError naming the text where it is not one."""
    where = f"--set {text}"
    path, sep, raw = text.partition("=")
    keys = tuple(path.strip().split("."))
    if not sep or not all(_KEY.match(k) for k in keys):
        raise RecipeError(
            "--set",
            [Problem(where, "expected PATH=VALUE with a dotted field path, such as "
                     "retrieval.seed.k=5 or llm.temperature=0")],
        )  # fmt: skip
    value = parse_yaml(raw, where) if raw.strip() else ""
    return Override(keys, value, text)


def parse_all(texts: Iterable[str]) -> tuple[Override, ...]:
    return tuple(parse_override(t) for t in texts)


def llm_file(name: str) -> Path:
    """The recipe file whose ``llm:`` ``--llm NAME`` takes: ``recipes/llms/NAME.yaml``, or NAME
    itself where it is a file."""
    given = Path(name)
    is_path = given.suffix in (".yaml", ".yml") or given.is_file()
    found = given if is_path else LLMS / f"{name}.yaml"
    if not found.is_file():
        known = ", ".join(sorted(p.stem for p in LLMS.glob("*.yaml"))) or "none found"
        raise RecipeError(
            "--llm", [Problem(f"--llm {name}", f"no such LLM recipe; known: {known}, or a "
                              "recipe file's path")],
        )  # fmt: skip
    return found


def llm_section(name: str) -> dict[str, Any]:
    """The ``llm:`` section ``--llm NAME`` puts over a recipe."""
    path = llm_file(name)
    section = resolve(path).get("llm")
    if not isinstance(section, Mapping):
        raise RecipeError("--llm", [Problem(f"--llm {name}", f"{path} has no llm: section")])
    return dict(section)


def apply(
    data: Mapping[str, Any], overrides: Sequence[Override] = (), llm: str | None = None
) -> dict[str, Any]:
    """The resolved recipe ``data`` with ``--llm``'s section and then each ``--set`` merged
    over it. ``--llm`` replaces the ``llm:`` section whole, so that nothing of the recipe's own
    LLM (an ``api_base``, a local model's ``prompt_cache``) leaks into the new one."""
    out = dict(data)
    if llm is not None:
        out["llm"] = llm_section(llm)
    for override in overrides:
        out = merge(out, override.nested())
    return out


def describe(overrides: Sequence[str], llm: str | None) -> tuple[str, ...]:
    """The changes as a run records and a command says them: ``--llm NAME``, then each
    ``--set PATH=VALUE`` as given."""
    return ((f"--llm {llm}",) if llm else ()) + tuple(f"--set {o}" for o in overrides)


def load_changed(
    path: str | Path,
    overrides: Sequence[Override] = (),
    llm: str | None = None,
    roots: Iterable[str | Path] = (),
) -> Recipe:
    """A recipe file loaded with ``--llm`` and ``--set`` applied, typed and checked as the file
    is (an error names the field; a ``--set`` value's own problem names the ``--set``)."""
    return structure(apply(resolve(path, roots), overrides, llm), str(path))


def check_changed(
    path: str | Path,
    overrides: Sequence[Override] = (),
    llm: str | None = None,
    *,
    load_plugins: bool = False,
) -> Checked:
    """:func:`chainrag.recipes.recipe.check_recipe` with ``--llm`` and ``--set`` applied."""
    return check(apply(resolve(path), overrides, llm), str(path), load_plugins=load_plugins)
