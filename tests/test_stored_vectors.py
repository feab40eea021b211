"""Stored vectors answer as fresh ones do: ChainRAG (ansint.yaml) and NaiveRAG (naive.yaml) on
30 questions of musique with the shipped recipes' embedder (the offline all-MiniLM-L6-v2), and
of long:musique with the ``hashed_bow`` embedder (its vectors do not depend on the batch, so it
checks that every text of a padded context, shared across questions, gets its own vector,
sentences and entities back; MiniLM there would embed 16,000 sentences afresh for "before"),
answered by the deterministic stand-in (``chainrag.standin.replies.standin_reply``).

"Before" is today's path: each question's index embedded in one call of its own texts, and the
dense reranker embedding its candidates again; "after" takes every vector from the store of
vectors by text, filled by the questions in the reverse order (so a shared paragraph's vector
was computed in another question's batch), and the reranker takes the index's rows. A vector
depends slightly on its batch (padding): the largest difference is printed and bounded, and
the seed candidates (all of them, in order), every prompt the LLM was sent, and every answer
and trace must be the same. Units are compared by their text. A sentence found in two passages
is two units with one stored vector, so the two tie and keep index order, where today's vectors
of the two (computed at two paddings) differ in the 7th decimal and order them either way; the
walk then goes on from the other passage (seen on musique, question 2hop__15368_17873). For a
question whose index holds a text twice only the first retrieval's candidates (by text) are
compared, and how many such questions answered or walked otherwise is printed (with
``hashed_bow`` a text's vector is one in both paths: every question is compared in full).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.retrieval import rerankers, retrievers
from chainrag.context import StageContext
from chainrag.core.context import ModelStore
from chainrag.core.types import FloatArray, Hit, LLMRequest, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.index.build import IndexCache, build_chunk_index, build_index, build_sentence_graph
from chainrag.index.graph import SentenceGraph
from chainrag.index.stores import AnnotationCache
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.prompts import available
from chainrag.protocols.context import Context
from chainrag.protocols.units import Searchable
from chainrag.recipes.recipe import Recipe, load_recipe
from chainrag.run.question import answer_question
from chainrag.standin.replies import standin_reply

from .conftest import ROOT

RECIPES = ("chainrag/ansint.yaml", "baselines/naive.yaml")
LARGEST = 1e-5
"""The bound on |stored − fresh| (float32 vectors of unit length)."""


def standin() -> ScriptedLLM:
    """The stand-in server's replies, without the server: every prompt id, one function."""

    def reply(request: LLMRequest) -> str:
        body: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content}
                                             for m in request.messages]}  # fmt: skip
        if request.json_schema is not None:
            schema = json.loads(request.json_schema)
            body["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
        return standin_reply(body)

    return ScriptedLLM(dict.fromkeys(available(), reply))


def fresh_index(recipe: Recipe, example: QAExample, ctx: Context, ann: AnnotationCache) -> Any:
    """Today's index: its vectors from one embedder call over the question's own texts."""
    assert recipe.index is not None and recipe.retrieval is not None
    if recipe.index.chunker is not None:
        return build_chunk_index(example.passages, recipe.index, ctx, None)[0]
    graph, _ = build_sentence_graph(example.passages, recipe.index, ctx, None, ann)
    return graph


def searchable(recipe: Recipe, index: Any) -> Searchable:
    assert recipe.retrieval is not None
    if isinstance(index, SentenceGraph):
        return index.view(recipe.retrieval.edge_weights or None)
    out: Searchable = index
    return out


def answered(recipe: Recipe, example: QAExample, index: Searchable, models: ModelStore,
             candidates: list[list[int]]) -> tuple[Any, list[Any]]:  # fmt: skip
    """The prediction (its timings left out, its units as their texts) and every request the
    stand-in got."""
    llm = standin()
    candidates.clear()
    prediction = answer_question(recipe, example, llm, models=models, index=index)
    texts = index.texts
    steps = [(s.question, s.rewritten, [texts[u] for u in s.retrieved], s.answer)
             for s in prediction.steps]  # fmt: skip
    answers = [(a.name, a.answer.text) for a in prediction.answers]
    requests = [(r.prompt_id, r.messages) for r in llm.requests]
    found = [[texts[u] for u in hits] for hits in candidates]
    return (answers, steps, prediction.decomposition, found), requests


def embedded_again(index: Searchable, texts: list[str], ctx: Context) -> FloatArray:
    """Today's dense reranker: the candidates embedded again."""
    return index.embedder(texts, ctx, "passage")


def query_again(index: Searchable, query: str, ctx: Context) -> FloatArray:
    return index.embedder([query], ctx, "query")


def with_embedder(recipe: Recipe, hashed: bool) -> Recipe:
    if not hashed:
        return recipe
    assert recipe.index is not None
    return attrs.evolve(recipe, index=attrs.evolve(recipe.index, embedder=HashedBagOfWords(512)))


@pytest.mark.parametrize(
    ("dataset", "hashed"),
    [
        pytest.param("musique", False, marks=[pytest.mark.slow, pytest.mark.timeout(1800)]),
        ("long:musique", True),
    ],
)
def test_stored_vectors_give_the_same_answers(
    dataset: str, hashed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = load_dataset(dataset, limit=30)
    models, ann = ModelStore(), AnnotationCache(tmp_path / "annotations")
    recorded: list[list[int]] = []
    first_stage = retrievers.DenseRerank.candidate_hits

    def recording(self: Any, query: str, index: Searchable, ctx: Context) -> tuple[Hit, ...]:
        hits = first_stage(self, query, index, ctx)
        recorded.append([h.index for h in hits])
        return hits

    monkeypatch.setattr(retrievers.DenseRerank, "candidate_hits", recording)
    largest, twice, differ = 0.0, [], 0
    for name in RECIPES:
        recipe = with_embedder(load_recipe(ROOT / "recipes" / name), hashed)
        assert recipe.index is not None
        cache = IndexCache(tmp_path / name / "indexes", annotations=ann)
        after: dict[str, tuple[Any, list[Any], FloatArray]] = {}
        for example in reversed(examples):  # fills the store in another order than below
            index, _ = build_index(
                example.passages, recipe.index, StageContext(models=models), cache
            )
            got = answered(recipe, example, searchable(recipe, index), models, recorded)
            after[example.qid] = (*got, index.embeddings)
        with monkeypatch.context() as today:  # the reranker embeds its candidates again
            today.setattr(rerankers, "text_vectors", embedded_again)
            today.setattr(rerankers, "query_vector", query_again)
            for example in examples:
                index = fresh_index(recipe, example, StageContext(models=models), ann)
                outcome, requests = answered(recipe, example, searchable(recipe, index), models,
                                             recorded)  # fmt: skip
                stored_outcome, stored_requests, vectors = after[example.qid]
                largest = max(largest, float(np.max(np.abs(vectors - index.embeddings))))
                assert stored_outcome[3][:1] == outcome[3][:1], (name, example.qid)
                if not hashed and len(set(index.texts)) < len(index.texts):  # a text twice
                    twice.append(example.qid)
                    differ += stored_outcome != outcome
                    continue
                assert stored_outcome == outcome, (name, example.qid)
                assert stored_requests == requests, (name, example.qid)
    print(f"{dataset}: largest |stored - fresh| over every vector: {largest:.3g}; "
          f"{len(twice)} (recipe, question) pairs hold a text twice and were compared by their "
          f"first candidates only; {differ} of them answered or walked otherwise")  # fmt: skip
    assert largest <= LARGEST
    assert len(twice) < len(RECIPES) * len(examples) // 2  # the rest were compared in full
