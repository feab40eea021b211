"""Answering one question with a recipe: build its index, prepare the context, run the method.

    with open_llm(recipe.llm, cache_path=...) as llm:
        prediction = answer_question(recipe, example, llm)

Every question gets its own metered view of the shared LLM, so its prediction carries exactly
the calls, cache hits, tokens, latency and cost it took, per prompt id.
"""

from __future__ import annotations

import attrs

from chainrag.context import Context, ModelStore
from chainrag.errors import ChainragError
from chainrag.graph import SentenceGraph
from chainrag.index import IndexCache, build_index
from chainrag.llm.stack import Ledger, MeteredLLM
from chainrag.protocols.llm import LLM
from chainrag.protocols.retrieval import Searchable
from chainrag.recipe import Recipe
from chainrag.types import Prediction, QAExample


class RecipeIncompleteError(ChainragError):
    """The recipe lacks a section that answering questions needs."""


def check_runnable(recipe: Recipe) -> None:
    """Raise unless ``recipe`` has the index, retrieval and method sections a run needs."""
    missing = [name for name in ("index", "retrieval", "method") if getattr(recipe, name) is None]
    if missing:
        raise RecipeIncompleteError(
            f"recipe {recipe.name!r} cannot answer questions: it has no {', '.join(missing)} "
            "section (extend one of recipes/chainrag, recipes/baselines)"
        )


def searchable_index(
    recipe: Recipe, example: QAExample, models: ModelStore, cache: IndexCache | None = None
) -> Searchable:
    """The index of ``example``'s passages as the recipe's retrieval walks it."""
    check_runnable(recipe)
    assert recipe.index is not None
    assert recipe.retrieval is not None
    index, _ = build_index(example.passages, recipe.index, Context(models=models), cache)
    if isinstance(index, SentenceGraph):
        return index.view(recipe.retrieval.edge_weights or None)
    return index


def answer_question(
    recipe: Recipe,
    example: QAExample,
    llm: LLM,
    *,
    cache: IndexCache | None = None,
    models: ModelStore | None = None,
    index: Searchable | None = None,
) -> Prediction:
    """The method's prediction for ``example``, with the question's LLM usage filled in.

    ``index`` is the one :func:`searchable_index` gives; it is built (or loaded) when omitted.
    """
    check_runnable(recipe)
    assert recipe.method is not None
    models = models or ModelStore()
    searchable = index if index is not None else searchable_index(recipe, example, models, cache)
    ledger = Ledger()
    ctx = Context(
        llm=MeteredLLM(llm, ledger),
        models=models,
        index=searchable,
        retrieval=recipe.retrieval,
        ledger=ledger,
    )
    prediction = recipe.method(example, ctx)
    by_prompt = tuple(ledger.by_prompt().items())
    return attrs.evolve(prediction, usage=ledger.total(), usage_by_prompt=by_prompt)
