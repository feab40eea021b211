"""Arbitrary JSON-like input never makes the recipe loader raise anything but RecipeError."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chainrag.errors import RecipeError
from chainrag.recipe import Recipe, structure

KEYS = [
    "name",
    "description",
    "plugins",
    "llm",
    "index",
    "retrieval",
    "method",
    "kind",
    "seed",
    "edges",
    "chunker",
    "size",
    "overlap",
    "window",
    "temperature",
    "edge_weights",
    "sa",
]
KINDS = ["word_chunks", "structural_adjacency", "none", "pronoun_words", "popularity", "x"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.sampled_from(KINDS),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=6), st.integers())
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=30,
)
recipe_like = st.fixed_dictionaries(
    {},
    optional={
        "name": json_like,
        "llm": json_like,
        "index": st.fixed_dictionaries(
            {}, optional={"chunker": json_like, "edges": json_like, "splitter": json_like}
        ),
        "retrieval": json_like,
        "method": json_like,
        "plugins": json_like,
    },
)


def _load(value: Any) -> None:
    try:
        recipe: Recipe | RecipeError = structure(value, "fuzz")
    except RecipeError as exc:
        recipe = exc
    if isinstance(recipe, RecipeError):
        assert recipe.problems, "a RecipeError always names at least one problem"
        assert all(p.path.startswith("fuzz") for p in recipe.problems)
    else:
        assert isinstance(recipe, Recipe)


@given(json_like)
def test_arbitrary_values_raise_only_recipe_errors(value: Any) -> None:
    _load(value)


@given(recipe_like)
def test_recipe_shaped_values_raise_only_recipe_errors(value: Any) -> None:
    _load(value)
