"""A component declares what it needs of the recipe around it (``check_recipe``, issue 47,
item 6), and a recipe runs every such check when it loads, so an impossible combination is
refused with the component's path before anything runs (item 5: an expander over chunks, a
hybrid retriever with a vector search it would ignore)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from chainrag.components.reasoning.integrators import AnsInt, CxtInt
from chainrag.components.retrieval.retrievers import DenseRerank
from chainrag.components.retrieval.search import ExactSearch
from chainrag.core.errors import RecipeError
from chainrag.core.types import Answer, IntegrationInput
from chainrag.methods.paper import ChainRAG
from chainrag.protocols.context import Context
from chainrag.protocols.parts import ChecksRecipe, Filtered, InProcesses, Judged, Named
from chainrag.recipes.recipe import Recipe, load_recipe

from .conftest import ROOT

SEEN: list[str] = []


@attrs.frozen
class NeedsAnIndex:
    """An integrator (as a plugin would write it) that needs the recipe to have an index."""

    def check_recipe(self, recipe: Recipe) -> None:
        SEEN.append(recipe.name)
        if recipe.index is None:
            raise ValueError("needs an index: set index:")

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        return Answer("x")


def test_a_components_own_check_runs_at_load_and_names_its_path() -> None:
    SEEN.clear()
    method = ChainRAG(integrators=(AnsInt(), NeedsAnIndex()))
    with pytest.raises(ValueError, match=re.escape("method.integrators[1]: needs an index")):
        Recipe("r", method=method)
    assert SEEN == ["r"]
    assert isinstance(NeedsAnIndex(), ChecksRecipe) and not isinstance(AnsInt(), ChecksRecipe)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return path


def test_an_expander_over_chunks_is_refused_when_the_recipe_loads(tmp_path: Path) -> None:
    path = write(tmp_path, f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\n"
                           "retrieval: {expander: {kind: iterative_hops}}\n")  # fmt: skip
    with pytest.raises(RecipeError, match=r"retrieval\.expander: iterative_hops walks .*chunks"):
        load_recipe(path)
    path = write(tmp_path, f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\n"
                           "retrieval: {expander: {kind: one_step_rerank}}\n")  # fmt: skip
    with pytest.raises(RecipeError, match=r"one_step_rerank walks .*remove retrieval\.expander"):
        load_recipe(path)


def test_hybrid_seeds_with_a_vector_search_are_refused(tmp_path: Path) -> None:
    seed = "{hybrid: true, search: {kind: faiss_hnsw}}"
    path = write(tmp_path, f"base: {ROOT / 'recipes' / 'chainrag' / 'ansint.yaml'}\n"
                           f"retrieval: {{seed: {seed}}}\n")  # fmt: skip
    with pytest.raises(RecipeError, match=r"hybrid: true .* never uses its search"):
        load_recipe(path)
    assert DenseRerank(hybrid=True, search=ExactSearch()).hybrid  # exact search: nothing lost


def test_optional_parts_are_protocols() -> None:
    recipe = load_recipe(ROOT / "recipes" / "chainrag" / "ansint.yaml")
    assert recipe.retrieval is not None and isinstance(recipe.retrieval.expander, Judged)
    assert recipe.judge is recipe.retrieval.expander.judge  # type: ignore[union-attr]
    assert load_recipe(ROOT / "recipes" / "baselines" / "naive.yaml").judge is None
    assert isinstance(CxtInt(name="c"), Named)
    assert isinstance(load_recipe(ROOT / "recipes" / "seeds" / "four_module.yaml").method, Filtered)
    assert not isinstance(recipe.method, Filtered)
    assert recipe.index is not None and isinstance(recipe.index.ner, InProcesses)
