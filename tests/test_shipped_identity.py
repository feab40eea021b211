"""What a user names stays put when the code moves: every registry's keys and every shipped
recipe's digest (the one that decides whether a run folder resumes), against the list in
tests/data/shipped_identity.json. A change that means to alter one regenerates the list with
``python -m tests.test_shipped_identity`` and says why in its commit."""

from __future__ import annotations

import json
from pathlib import Path

from chainrag.recipes.recipe import load_recipe
from chainrag.recipes.registry import REGISTRIES, load_builtins
from chainrag.run.meta import recipe_digest

from .conftest import ROOT

LISTED = Path(__file__).parent / "data" / "shipped_identity.json"


def shipped_identity() -> dict[str, dict[str, object]]:
    """The built-in registries' keys by stage and the digest of every recipe file under recipes/."""
    load_builtins()
    keys = {}  # a plugin another test registers is not shipped
    for registry in REGISTRIES:
        entries = (e for e in registry if e.cls.__module__.startswith("chainrag."))
        keys[registry.stage] = {e.key: e.cls.__qualname__ for e in entries}
    digests = {}
    for path in sorted((ROOT / "recipes").rglob("*.yaml")):
        recipe = load_recipe(path)
        if recipe.method is not None:
            digests[path.relative_to(ROOT).as_posix()] = recipe_digest(recipe)
    return {"registries": dict(keys), "recipes": dict(digests)}


def test_registry_keys_and_recipe_digests_are_as_listed() -> None:
    listed = json.loads(LISTED.read_text())
    now = shipped_identity()
    assert now["registries"] == listed["registries"]
    changed = {k: (v, now["recipes"].get(k)) for k, v in listed["recipes"].items()
               if now["recipes"].get(k) != v}  # fmt: skip
    assert not changed, f"recipe digests changed (listed, now): {changed}"
    # a new recipe file may come with new work; a listed one may not silently go
    assert set(listed["recipes"]) <= set(now["recipes"])


if __name__ == "__main__":
    LISTED.write_text(json.dumps(shipped_identity(), indent=1, sort_keys=True) + "\n")
