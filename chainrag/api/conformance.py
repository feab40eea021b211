"""The conformance kit: what every component must do, as plugin authors can check it.

    from chainrag.api.conformance import check_component
    problems = check_component(MyJudge, "sufficiency_judge")   # [] when it conforms
    assert not problems, "\n".join(problems)

In the spirit of scikit-learn's ``check_estimator``: a component class is checked against its
stage's Protocol and contract, each check returning the problems it found (an empty list when
it passes):

* :func:`check_frozen` — an attrs class, frozen: setting a field raises (a registry refuses
  another, but a class checked before it is registered is checked here too);
* :func:`check_round_trip` — it builds from its parameters through the recipe converter, and its
  YAML dump loads back to an equal object (registered components only: the converter finds a
  component by its registered ``kind``);
* :func:`check_signature` — its ``__call__`` takes the stage Protocol's parameters (names,
  kinds, types) and returns the Protocol's type; an ``isinstance`` check alone would only see
  that a ``__call__`` exists;
* :func:`check_documented` — its docstring says what it does on the first line and shows a
  one-line recipe example (``{kind: KEY...}``);
* :func:`check_behaviour` — on the stage's example inputs (:data:`EXAMPLE_INPUTS`) the same
  input gives the same output, no input is mutated, and the context's resources (its LLM,
  model store, index, retrieval, ledger) are the same objects after the call as before.

:func:`check_registered` runs them over every registered component (plugins included, once
imported); ``tests/test_conformance.py`` asserts it finds nothing.

Layer: api (it builds example inputs from every lower layer).
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np
import yaml
from scipy import sparse

from chainrag.components.index.edges import EntityCooccurrence, StructuralAdjacency
from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.context import StageContext
from chainrag.core.phrase_graph import Extraction, PhraseGraph
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
from chainrag.recipes.registry import REGISTRIES, Registry, load_builtins, registered_key
from chainrag.recipes.structure import CONVERTER, unstructure

__all__ = [
    "EXAMPLE_INPUTS", "check_behaviour", "check_component", "check_documented", "check_frozen",
    "check_registered", "check_round_trip", "check_signature", "registry_of",
]  # fmt: skip


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
    inputs = GraphInputs(
        sentences, inputs.key_entities, HashedBagOfWords(dim=16)(texts, StageContext())
    )
    return SentenceGraph(
        passages=tuple(
            Passage(str(p), f"T{p}", " ".join(texts[i] for i in members))
            for p, members in enumerate(([0, 1, 2, 3, 4], [5, 6], [7]))
        ),
        sentences=sentences,
        embeddings=inputs.embeddings,  # type: ignore[arg-type]
        embedder=HashedBagOfWords(dim=16),
        entities=(),
        incidence=sparse.csr_matrix((len(texts), 0), dtype=np.float32),
        key_entities=inputs.key_entities,
        layers={"sa": StructuralAdjacency()(inputs), "ec": EntityCooccurrence()(inputs)},
    )


def _extractions() -> tuple[Extraction, ...]:
    return (
        Extraction(("France", "Paris"), (("Paris", "is in", "France"), ("Paris", "is"))),
        Extraction(("Lyon",), (("Lyon", "is in", "France"),)),
        Extraction((), (), ner_read=False, triples_read=False),
        Extraction(("Rome",), (("Rome", "is", "old"),)),
    )


def _phrase_graph(extractions: tuple[Extraction, ...] | None = None) -> PhraseGraph:
    """HippoRAG's graph of a few extractions, built by the authors' rules."""
    from chainrag.components.phrases.graph import HippoRAGGraph

    found = _extractions() if extractions is None else extractions
    return HippoRAGGraph(threshold=0.5)(found, HashedBagOfWords(dim=16), StageContext())


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
        "openie_ner": '{"named_entities": ["Paris", "France"]}',
        "openie_triples": '{"triples": [["Paris", "is in", "France"], ["Paris", "is"]]}',
        "query_ner": '{"named_entities": ["Paris"]}',
        "ircot_musique": "Paris is in France.",
    }.get(request.prompt_id, "Ann")


def _llm_context() -> StageContext:
    return StageContext(llm=ScriptedLLM(dict.fromkeys(available(), _reply)))  # every prompt


def _method_context() -> StageContext:
    from chainrag.components.retrieval.retrievers import DenseRerank
    from chainrag.recipes.recipe import RetrievalSpec

    ctx = _llm_context()
    ctx.index = _toy_graph().view()
    ctx.retrieval = RetrievalSpec(DenseRerank(k=2))
    return ctx


def _judge_context() -> StageContext:
    script = {
        "sufficiency": lambda r: "No." if "Berlin" in str(r) else "Yes",
        "answer_sub": lambda r: "unanswerable" if "Berlin" in str(r) else "France",
    }
    return StageContext(llm=ScriptedLLM(script), index=_toy_graph().view())  # a judge may embed


EXAMPLE_INPUTS: dict[str, Callable[[], list[tuple[Any, ...]]]] = {
    "sentence_splitter": lambda: [
        ((Passage("0", "A", "One. Two three. Four"), Passage("1", "B", "")), StageContext()),
        ((), StageContext()),
    ],
    "ner": lambda: [
        (("Paris is the capital of France.", "It opened in 1889.", ""), StageContext()),
        ((), StageContext()),
    ],
    "key_entity_scorer": lambda: [
        ((("paris", "france"), ("paris",), (), ("1889", "eiffel tower", "paris")),),
        ((),),
    ],
    "embedder": lambda: [
        (("Paris is the capital of France.", "Berlin"), StageContext(), "passage"),
        (("capital of France?",), StageContext(), "query"),
    ],
    "rewrite_trigger": lambda: [
        ("Where is the hometown of this author?",),
        ("Who wrote The Worries of the City?",),
        ("",),
    ],
    "edge_builder": lambda: [
        (_graph_inputs(),),
        (GraphInputs((), (), np.zeros((0, 4), dtype=np.float32)),),
    ],
    "vector_search": lambda: [
        (_graph_inputs().embeddings,),
        (np.zeros((0, 4), dtype=np.float32),),
    ],
    "seed_retriever": lambda: [  # HippoRAG's reads its passages and the query with the LLM
        ("Where is Paris?", _toy_graph(), _llm_context()),
        ("", _toy_graph(), _llm_context()),
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
    "rewrite_confirmer": lambda: [
        ("Where was this author born?", (SubAnswer("Who wrote X?", "Ann", True),), _llm_context()),
        ("Where was this author born?", (), _llm_context()),
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
        ("q", (Hit(2, 0.9), Hit(0, 0.5), Hit(1, 0.5)), ("c", "a", "b"), StageContext()),
        ("q", (), (), StageContext()),
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
    "open_ie": lambda: [
        (("Paris is in France.", "Rome is old.", ""), _llm_context()),
        ((), _llm_context()),
    ],
    "phrase_graph_builder": lambda: [
        (_extractions(), HashedBagOfWords(dim=16), StageContext()),
        ((), HashedBagOfWords(dim=16), StageContext()),
    ],
    "entity_linker": lambda: [
        ("Where is Paris?", _phrase_graph(), HashedBagOfWords(dim=16), _llm_context()),
        ("Where is Paris?", _phrase_graph(()), HashedBagOfWords(dim=16), _llm_context()),
    ],
    "phrase_ranker": lambda: [
        (_phrase_graph(), np.array([1.0, 0.0, 0.0, 0.5, 0.0])),
        (_phrase_graph(), np.array([0.0, 0.0, 0.0, 0.0, 2.0])),
    ],
    "cache_trigger": lambda: [
        (ReservoirMatch((), np.array([0.9, 0.5, 0.41, 0.1], dtype=np.float32)),),
        (ReservoirMatch((), np.zeros(0, dtype=np.float32)),),
    ],
}


def _context_resources(ctx: StageContext) -> dict[str, int]:
    """The identity of each of a context's resources: a component that replaces one (sets
    ``ctx.llm``, ``ctx.index``, …) has mutated the context."""
    return {f.name: id(getattr(ctx, f.name)) for f in attrs.fields(StageContext)}


def same(a: Any, b: Any) -> bool:
    """Deep equality that understands sparse matrices and arrays. Contexts are compared by
    :func:`check_behaviour` through their resources' identity (their LLM's log of requests
    grows as it is used), so two contexts count as equal here."""
    if isinstance(a, StageContext) and isinstance(b, StageContext):
        return True
    if sparse.issparse(a) or sparse.issparse(b):
        return bool(
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


def registry_of(stage: str) -> Registry[Any]:
    """The registry of ``stage`` (``sufficiency_judge``, ``integrator``, …)."""
    for registry in REGISTRIES:
        if registry.stage == stage:
            return registry
    raise KeyError(f"no stage {stage!r}; stages: {', '.join(r.stage for r in REGISTRIES)}")


def build(cls: type, stage: str, params: Mapping[str, Any] | None = None) -> Any:
    """An instance of ``cls``: through the recipe converter where it is registered (as a
    recipe builds it), else from ``params`` directly."""
    key = registered_key(cls)
    if key is not None and key[0] == stage:
        return CONVERTER.structure({"kind": key[1], **(params or {})}, registry_of(stage).protocol)
    return cls(**(params or {}))


def check_frozen(cls: type, stage: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """An attrs class none of whose fields can be set: a problem for each field that can."""
    if not attrs.has(cls):
        return [f"{cls.__name__} is not an attrs class (use @attrs.frozen)"]
    obj = build(cls, stage, params)
    problems = []
    for field in attrs.fields(cls):
        try:
            setattr(obj, field.name, getattr(obj, field.name))
        except attrs.exceptions.FrozenError:  # the class frozen, or the field
            continue
        problems.append(
            f"{cls.__name__} is not frozen: its field {field.name!r} could be set (@attrs.frozen)"
        )
    return problems


def check_round_trip(cls: type, stage: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """Built from its parameters by the recipe converter, dumped to YAML and loaded back: the
    same object (registered components only)."""
    key = registered_key(cls)
    if key is None or key[0] != stage:
        return [f"{cls.__name__} is not registered as a {stage} (@{stage.upper()}S.register)"]
    obj = build(cls, stage, params)
    if type(obj) is not cls:
        return [f"kind {key[1]!r} builds a {type(obj).__name__}, not a {cls.__name__}"]
    data = parse_yaml(yaml.safe_dump(unstructure(obj)), "dump")
    if data.get("kind") != key[1]:
        return [f"its dump names kind {data.get('kind')!r}, not {key[1]!r}"]
    back: Any = CONVERTER.structure(data, registry_of(stage).protocol)
    return [] if back == obj else [f"its YAML dump loads back as {back!r}, not {obj!r}"]


def _names() -> dict[str, Any]:
    """What annotations name, beyond a module's own globals: protocols and components import
    their types under ``TYPE_CHECKING``, so those are looked up here."""
    import collections.abc

    import chainrag.core.context
    import chainrag.core.types
    import chainrag.index.graph
    import chainrag.protocols.context
    import chainrag.protocols.index
    import chainrag.protocols.resources
    import chainrag.protocols.units
    import chainrag.recipes.recipe

    found: dict[str, Any] = {}
    modules = (collections.abc, typing, chainrag.core.types, chainrag.core.context,
               chainrag.protocols.resources, chainrag.protocols.context, chainrag.protocols.units,
               chainrag.protocols.index, chainrag.index.graph, chainrag.recipes.recipe)  # fmt: skip
    for module in modules:
        found.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
    found.update(np=np, sparse=sparse, csr_matrix=sparse.csr_matrix)
    return found


def _members(protocol: type) -> set[str]:
    """The names a Protocol class asks for: its methods and annotated attributes."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base is object or not getattr(base, "_is_protocol", False):
            continue
        names |= {n for n in vars(base) if not n.startswith("_")}
        names |= set(getattr(base, "__annotations__", {}))
    return names


def returns_ok(got: Any, want: Any) -> bool:
    """Whether a ``__call__`` returning ``got`` gives what the Protocol's ``want`` promises:
    the same type, a subclass, or a class with every member a Protocol ``want`` names."""
    if got == want:
        return True
    if not (inspect.isclass(got) and inspect.isclass(want)):
        return False
    if getattr(want, "_is_protocol", False):
        have = set(dir(got)) | ({a.name for a in attrs.fields(got)} if attrs.has(got) else set())
        return _members(want) <= have
    return issubclass(got, want)


def _call_types(function: Callable[..., Any]) -> tuple[list[tuple[str, Any, Any]], Any]:
    """(name, kind, type) of each parameter but ``self``, and the return type."""
    module = inspect.getmodule(function)
    space = {**_names(), **(vars(module) if module else {})}
    hints = typing.get_type_hints(function, globalns=space)
    signature = inspect.signature(function)
    found = [(p.name, p.kind, hints.get(p.name, inspect.Parameter.empty))
             for p in signature.parameters.values() if p.name != "self"]  # fmt: skip
    return found, hints.get("return", inspect.Parameter.empty)


def check_signature(cls: type, stage: str) -> list[str]:
    """``__call__`` with the Protocol's parameters (names, kinds, types) and return type."""
    protocol = registry_of(stage).protocol
    if not callable(getattr(cls, "__call__", None)):  # noqa: B004 - a class's own __call__
        return [f"{cls.__name__} has no __call__"]
    want, want_return = _call_types(protocol.__call__)
    try:
        got, got_return = _call_types(cls.__call__)
    except (NameError, TypeError) as exc:
        return [f"{cls.__name__}.__call__'s annotations cannot be read ({exc})"]
    problems = []
    if [(n, k) for n, k, _ in got] != [(n, k) for n, k, _ in want]:
        problems.append(f"{cls.__name__}.__call__ takes {[n for n, _, _ in got]}, the "
                        f"{stage} Protocol {[n for n, _, _ in want]}")  # fmt: skip
    else:
        for (name, _, got_type), (_, _, want_type) in zip(got, want, strict=True):
            if got_type != want_type:
                problems.append(f"{cls.__name__}.__call__'s {name} is {got_type!r}, the "
                                f"{stage} Protocol's {want_type!r}")  # fmt: skip
    if not returns_ok(got_return, want_return):
        problems.append(f"{cls.__name__}.__call__ returns {got_return!r}, the {stage} "
                        f"Protocol {want_return!r}")  # fmt: skip
    return problems


def check_documented(cls: type, stage: str) -> list[str]:
    """A first docstring line, and a one-line recipe example ``{kind: KEY...}``."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    key = registered_key(cls)
    problems = [] if doc.split("\n")[0].strip() else [f"{cls.__name__}: no docstring summary"]
    if key is not None and f"{{kind: {key[1]}" not in doc:
        problems.append(
            f"{cls.__name__}'s docstring shows no recipe example {{kind: {key[1]}, ...}}"
        )
    return problems


def check_behaviour(
    cls: type,
    stage: str,
    params: Mapping[str, Any] | None = None,
    inputs: Callable[[], list[tuple[Any, ...]]] | None = None,
) -> list[str]:
    """On the stage's example inputs (or ``inputs``): deterministic, no input mutated, the
    context's resources untouched."""
    make = inputs or EXAMPLE_INPUTS.get(stage)
    if make is None:
        return [f"no example inputs for the stage {stage!r} (pass inputs=...)"]
    obj = build(cls, stage, params)
    problems = []
    for args in make():
        before = copy.deepcopy(args)
        contexts = [(a, _context_resources(a)) for a in args if isinstance(a, StageContext)]
        first = obj(*args)
        if not all(same(x, y) for x, y in zip(args, before, strict=True)):
            problems.append(f"{cls.__name__} mutated its inputs")
        for ctx, resources in contexts:
            changed = [k for k, v in _context_resources(ctx).items() if resources[k] != v]
            if changed:
                problems.append(f"{cls.__name__} replaced the context's {', '.join(changed)}")
        if not same(first, obj(*copy.deepcopy(before))):
            problems.append(f"{cls.__name__}: the same input gave a different output")
    return problems


def check_component(cls: type, stage: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """Every check on ``cls`` as a component of ``stage`` (built from ``params``, else its
    registered example parameters): the problems found, none when it conforms."""
    if params is None:
        key = registered_key(cls)
        entries = {e.key: e for e in registry_of(stage)} if key is not None else {}
        params = entries[key[1]].example_params() if key is not None and key[1] in entries else {}
    problems = check_frozen(cls, stage, params)
    if problems:
        return problems
    problems += check_round_trip(cls, stage, params) if registered_key(cls) else []
    problems += check_signature(cls, stage) + check_documented(cls, stage)
    return problems + check_behaviour(cls, stage, params)


def check_registered() -> dict[tuple[str, str], list[str]]:
    """:func:`check_component` over every registered component (built-ins and the plugins
    imported so far): (stage, key) → problems, only where there are some."""
    load_builtins()
    found = {}
    for registry in REGISTRIES:
        for entry in registry:
            problems = check_component(entry.cls, registry.stage, entry.example_params())
            if problems:
                found[(registry.stage, entry.key)] = problems
    return found
