"""Checks every registered component passes (scikit-learn's ``parametrize_with_checks`` idea).

For each component: it builds from its example parameters through the recipe converter, its
YAML dump loads back to an equal object, it satisfies its stage Protocol (names and order of
``__call__`` parameters included), it is deterministic, and it does not mutate its inputs.
A stage that gains components must gain example inputs here, or this module fails.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
from scipy import sparse

from chainrag.components.edges import EntityCooccurrence, StructuralAdjacency
from chainrag.components.embedders import HashedBagOfWords
from chainrag.core.context import Context
from chainrag.core.types import (
    GraphInputs,
    Hit,
    IntegrationInput,
    KnowledgeItem,
    Passage,
    QAExample,
    ReservoirMatch,
    ScoredEntity,
    Sentence,
    SubAnswer,
)
from chainrag.index.graph import SentenceGraph
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.prompts import available
from chainrag.recipes.recipe import parse_yaml
from chainrag.recipes.registry import REGISTRIES, Entry, Registry
from chainrag.recipes.structure import CONVERTER, unstructure

from . import chainrag_toy_plugin  # noqa: F401  (a plugin's components must conform too)


def _sentences() -> tuple[Sentence, ...]:
    layout = [0, 0, 0, 0, 0, 1, 1, 2]
    return tuple(
        Sentence(i, f"sentence {i}", p, f"T{p}", layout[:i].count(p), 0, 10)
        for i, p in enumerate(layout)
    )


def _graph_inputs() -> GraphInputs:
    sentences = _sentences()
    names = [("a", "b"), ("a",), (), ("c",), ("b", "c"), (), ("a",), ("d",)]
    keys = tuple(tuple(ScoredEntity(e, 0.5) for e in row) for row in names)
    vectors = np.random.default_rng(0).normal(size=(len(sentences), 4)).astype(np.float32)
    return GraphInputs(sentences, keys, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def _toy_graph() -> SentenceGraph:
    inputs = _graph_inputs()
    texts = ["Paris is in France.", "It is big.", "Berlin is in Germany.", "Rome is old.",
             "France has Paris.", "Tokyo.", "Paris again.", "Lyon is in France."]  # fmt: skip
    sentences = tuple(attrs.evolve(s, text=t) for s, t in zip(inputs.sentences, texts, strict=True))
    inputs = GraphInputs(sentences, inputs.key_entities, HashedBagOfWords(dim=16)(texts, Context()))
    return SentenceGraph(
        passages=(Passage("0", "A", " ".join(texts)),),
        sentences=sentences,
        embeddings=inputs.embeddings,  # type: ignore[arg-type]
        embedder=HashedBagOfWords(dim=16),
        entities=(),
        incidence=sparse.csr_matrix((len(texts), 0), dtype=np.float32),
        key_entities=inputs.key_entities,
        layers={"sa": StructuralAdjacency()(inputs), "ec": EntityCooccurrence()(inputs)},
    )


def _reply(request: Any) -> str:
    return {
        "decompose": '["Who wrote X?", "Where was this author born?"]',
        "multi_hop": '{"is_multi_hop": true}',
        "sufficiency": "yes",
        "supports": "No, they do not.",
        "nli": "entailment" if "Paris" in str(request) else "neutral",
        "helps": "yes" if "Paris" in str(request) else "no",
        "query_plan": '{"Rewritten Question": ["Where is Paris?"], "Query": ["Paris city"]}',
        "follow_up": "Where is France?",
        "iter_retgen": "Ann wrote it. So the answer is: Ann",
    }.get(request.prompt_id, "Ann")


def _llm_context() -> Context:
    return Context(llm=ScriptedLLM(dict.fromkeys(available(), _reply)))  # every prompt


def _method_context() -> Context:
    from chainrag.components.retrievers import DenseRerank
    from chainrag.recipes.recipe import RetrievalSpec

    ctx = _llm_context()
    ctx.index = _toy_graph().view()
    ctx.retrieval = RetrievalSpec(DenseRerank(k=2))
    return ctx


def _judge_context() -> Context:
    script = {
        "sufficiency": lambda r: "No." if "Berlin" in str(r) else "Yes",
        "answer_sub": lambda r: "unanswerable" if "Berlin" in str(r) else "France",
    }
    return Context(llm=ScriptedLLM(script))


EXAMPLE_INPUTS: dict[str, Callable[[], list[tuple[Any, ...]]]] = {
    "sentence_splitter": lambda: [
        ((Passage("0", "A", "One. Two three. Four"), Passage("1", "B", "")), Context()),
        ((), Context()),
    ],
    "ner": lambda: [
        (("Paris is the capital of France.", "It opened in 1889.", ""), Context()),
        ((), Context()),
    ],
    "key_entity_scorer": lambda: [
        ((("paris", "france"), ("paris",), (), ("1889", "eiffel tower", "paris")),),
        ((),),
    ],
    "embedder": lambda: [
        (("Paris is the capital of France.", "Berlin"), Context(), "passage"),
        (("capital of France?",), Context(), "query"),
    ],
    "rewrite_trigger": lambda: [
        ("Where is the hometown of this author?",),
        ("Who wrote The Worries of the City?",),
        ("",),
    ],
    "edge_builder": lambda: [(_graph_inputs(),), (GraphInputs((), (), np.zeros((0, 4))),)],
    "vector_search": lambda: [
        (_graph_inputs().embeddings,),
        (np.zeros((0, 4), dtype=np.float32),),
    ],
    "seed_retriever": lambda: [
        ("Where is Paris?", _toy_graph(), Context()),
        ("", _toy_graph(), Context()),
    ],
    "expander": lambda: [
        ("Where is Paris?", (Hit(0, 1.0), Hit(3, 0.5)), _toy_graph().view(), _judge_context()),
        ("q", (), _toy_graph().view(), _judge_context()),
    ],
    "sufficiency_judge": lambda: [
        ("Where is Paris?", ("Paris is in France.",), _judge_context()),
        ("q", (), _judge_context()),
    ],
    "decomposer": lambda: [("Where was the author of X born?", _llm_context())],
    "multi_hop_judge": lambda: [("Where was the author of X born?", _llm_context())],
    "rewriter": lambda: [
        ("Where was this author born?", (SubAnswer("Who wrote X?", "Ann", True),), _llm_context())
    ],
    "summarizer": lambda: [("Who wrote X?", ("X is a book.",), _llm_context())],
    "answerer": lambda: [("Who wrote X?", ("X was written by Ann.",), _llm_context())],
    "integrator": lambda: [
        (
            IntegrationInput("Q?", (SubAnswer("q1", "a1", True),), ("q1",), ("e1", "e2")),
            _llm_context(),
        )
    ],
    "method": lambda: [(QAExample("q", "toy", "Where is Paris?"), _method_context())],
    "reranker": lambda: [
        ("q", (Hit(2, 0.9), Hit(0, 0.5), Hit(1, 0.5)), ("c", "a", "b"), Context()),
        ("q", (), (), Context()),
    ],
    "chunker": lambda: [
        ((Passage("0", "A", "one two three four five six seven"), Passage("1", "B", "")),),
        ((),),
    ],
    "follow_up_writer": lambda: [
        ("Where was the author of X born?", ("X was written by Ann.",), _llm_context()),
        ("q", (), _llm_context()),
    ],
    "query_rewriter": lambda: [("Where is Paris?", _llm_context())],
    "knowledge_filter": lambda: [
        ("Where is Paris?", (KnowledgeItem("Paris is."), KnowledgeItem("Rome.")), _llm_context()),
        ("q", (), _llm_context()),
    ],
    "cache_trigger": lambda: [
        (ReservoirMatch((), np.array([0.9, 0.5, 0.41, 0.1], dtype=np.float32)),),
        (ReservoirMatch((), np.zeros(0, dtype=np.float32)),),
    ],
}

ENTRIES = [(r, e) for r in REGISTRIES for e in r]


def same(a: Any, b: Any) -> bool:
    """Deep equality that understands sparse matrices and arrays; contexts are resources,
    not inputs (their LLM keeps a log of requests), so any two contexts count as equal."""
    if isinstance(a, Context) and isinstance(b, Context):
        return True
    if sparse.issparse(a) or sparse.issparse(b):
        return (
            sparse.issparse(a)
            and sparse.issparse(b)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and (a != b).nnz == 0
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


def build(registry: Registry[Any], entry: Entry) -> Any:
    return CONVERTER.structure({"kind": entry.key, **entry.example_params()}, registry.protocol)


def test_every_stage_with_components_has_example_inputs() -> None:
    missing = sorted({r.stage for r, _ in ENTRIES} - set(EXAMPLE_INPUTS))
    assert not missing, f"add example inputs for: {missing}"


@pytest.mark.parametrize(("registry", "entry"), ENTRIES, ids=lambda x: getattr(x, "key", ""))
class TestComponent:
    def test_builds_from_example_and_round_trips(
        self, registry: Registry[Any], entry: Entry
    ) -> None:
        obj = build(registry, entry)
        assert type(obj) is entry.cls
        data = parse_yaml(__import__("yaml").safe_dump(unstructure(obj)), "dump")
        assert data["kind"] == entry.key
        assert CONVERTER.structure(data, registry.protocol) == obj

    def test_satisfies_its_protocol(self, registry: Registry[Any], entry: Entry) -> None:
        obj = build(registry, entry)
        assert isinstance(obj, registry.protocol)
        want = list(inspect.signature(registry.protocol.__call__).parameters)
        got = list(inspect.signature(entry.cls.__call__).parameters)
        assert got == want, f"{entry.key}.__call__{got} differs from {registry.stage}{want}"

    def test_is_documented_with_a_recipe_example(
        self, registry: Registry[Any], entry: Entry
    ) -> None:
        doc = entry.cls.__doc__ or ""
        assert entry.summary, "first docstring line says what it does"
        assert f"{{kind: {entry.key}" in doc, "docstring shows a one-line recipe example"

    def test_is_frozen_parameters_only(self, registry: Registry[Any], entry: Entry) -> None:
        obj = build(registry, entry)
        field = next(iter(attrs.fields(type(obj))), None)
        if field is not None:
            with pytest.raises(attrs.exceptions.FrozenInstanceError):
                setattr(obj, field.name, getattr(obj, field.name))

    def test_deterministic_and_does_not_mutate(self, registry: Registry[Any], entry: Entry) -> None:
        obj = build(registry, entry)
        for args in EXAMPLE_INPUTS[registry.stage]():
            before = copy.deepcopy(args)
            first = obj(*args)
            assert all(same(x, y) for x, y in zip(args, before, strict=True)), "inputs mutated"
            assert same(first, obj(*copy.deepcopy(before))), "same input, different output"
