"""Every YAML file under recipes/ loads, and its resolved dump loads back to an equal recipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainrag.recipes.recipe import dump_recipe, load_recipe, parse_yaml, recipe_files, structure

from .conftest import ROOT

RECIPES = recipe_files([ROOT / "recipes"])


def test_there_are_recipes() -> None:
    assert RECIPES, "recipes/ holds no recipe"


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: str(p.relative_to(ROOT)))
def test_recipe_loads_and_round_trips(path: Path) -> None:
    recipe = load_recipe(path)
    again = structure(parse_yaml(dump_recipe(recipe), str(path)), str(path))
    assert again == recipe
