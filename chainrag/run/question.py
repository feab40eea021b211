"""Answering one question with a recipe: build its index, prepare the context, run the method,
score the answers and the retrieval.

    with open_llm(recipe.llm, cache_path=llm_cache_path()) as llm:
        prediction = answer_question(recipe, example, llm)              # the method's answer
        record = answer_and_score(recipe, example, llm, ModelStore())   # and its run record

Every question gets its own metered view of the shared LLM, so its prediction carries exactly
the calls, cache hits, tokens, latency and cost it took, per prompt id.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from chainrag.context import StageContext
from chainrag.core.context import EncoderLedger, MissingResourceError, ModelStore
from chainrag.core.device import cores
from chainrag.core.errors import ChainragError
from chainrag.core.types import Passage, Prediction, QAExample
from chainrag.data.metrics import gold_items, qa_scores, retrieval_scores, title_retrieval_scores
from chainrag.index.build import IndexCache, Turn, build_index
from chainrag.index.graph import SentenceGraph, units_of
from chainrag.index.turns import Turns
from chainrag.llm.stack import Ledger, MeteredLLM
from chainrag.protocols.llm import LLM, UsageLedger
from chainrag.protocols.units import Searchable
from chainrag.recipes.recipe import Recipe
from chainrag.run.notes import notes_of
from chainrag.run.record import RetrievalRecord, RunRecord, ScoredAnswer

if TYPE_CHECKING:
    from chainrag.index.corpus.store import CorpusIndex
    from chainrag.index.graph import ChunkIndex, GraphView
    from chainrag.llm.cache import CacheMode
    from chainrag.protocols.units import Graph

    def _indexes_conform(
        view: GraphView, corpus: CorpusIndex, chunks: ChunkIndex, ledger: Ledger
    ) -> tuple[Graph, Graph, Searchable, UsageLedger]:
        """What a question's context holds, checked by mypy: a question's graph view and a
        corpus index are graphs that expanders walk, a chunk index is searchable only, and the
        ledger is what the context reads usage from."""
        return view, corpus, chunks, ledger


RECALL_KS = (2, 4, 5, 10)
"""The k of the Recall@k and Hit@k every record holds."""


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


BUILDS = Turns(cores())
"""Questions' indexes built at once in a process: one a core, a question's own build before a
build ahead of its question (:mod:`chainrag.run.ahead`). A build is CPU work (spaCy holds
the GIL, the embedder a core): 64 questions in flight building at once thrash for the cores
and the GIL, and none reaches its first LLM call before nearly all are built; in turns, the
first questions' LLM calls wait on the network while later ones build (bench/api_throughput.py
at ``--concurrency 64``, docs/benchmarks.md). A build whose remote embedder waits on the network
gives its turn back meanwhile (:func:`~chainrag.index.build.build_index`)."""


def searchable_index(
    recipe: Recipe,
    example: QAExample,
    models: ModelStore,
    cache: IndexCache | None = None,
    encoders: EncoderLedger | None = None,
    turns: Turn = BUILDS,
) -> Searchable:
    """The index of ``example``'s passages as the recipe's retrieval walks it (built in one of
    ``turns``, the process's :data:`BUILDS`, given back while a remote embedder waits on the
    network); a remote embedder counts its work in ``encoders``."""
    check_runnable(recipe)
    assert recipe.index is not None
    assert recipe.retrieval is not None
    ctx = StageContext(models=models, encoders=encoders)
    index, _ = build_index(example.passages, recipe.index, ctx, cache, turns=turns)
    if isinstance(index, SentenceGraph):
        return index.view(recipe.retrieval.edge_weights or None)
    return index


@attrs.frozen
class Built:
    """A question's index built before the question started (:mod:`chainrag.run.ahead`): the
    index, the remote encoders' work it took, and its wall seconds."""

    index: Searchable
    encoders: EncoderLedger
    seconds: float


def builder(
    recipe: Recipe, models: ModelStore, cache: IndexCache | None
) -> Callable[[QAExample, Turn], Built]:
    """A question's index built as :func:`answer_and_score` builds it, in the turns given."""

    def build(example: QAExample, turns: Turn) -> Built:
        started, encoders = time.perf_counter(), EncoderLedger()
        index = searchable_index(recipe, example, models, cache, encoders, turns)
        return Built(index, encoders, time.perf_counter() - started)

    return build


def warm_up(
    recipe: Recipe, example: QAExample, models: ModelStore, index: Searchable | None = None
) -> None:
    """Load into ``models`` what answering ``example`` loads before its first LLM call: build
    its index (``index`` stands for it when given; nothing is cached) and retrieve its seeds,
    so that a question timed after it does not carry the loading of the embedder, the NER and
    the seed reranker. The LLM is not called: a seed retriever that needs it (HippoRAG's,
    which reads its passages and the query with the LLM) loads its models with the first
    question instead."""
    searchable = index if index is not None else searchable_index(recipe, example, models)
    assert recipe.retrieval is not None  # checked by searchable_index
    with contextlib.suppress(MissingResourceError):
        recipe.retrieval.seed(example.question, searchable, StageContext(models=models))


def answer_question(
    recipe: Recipe,
    example: QAExample,
    llm: LLM,
    *,
    cache: IndexCache | None = None,
    models: ModelStore | None = None,
    index: Searchable | None = None,
    encoders: EncoderLedger | None = None,
) -> Prediction:
    """The method's prediction for ``example``, with the question's LLM usage and what the
    recipe says of its method (:func:`~chainrag.run.notes.notes_of`) filled in, and the remote
    encoders' (``encoders``: where the index build counted its own, if it did).

    ``index`` is the one :func:`searchable_index` gives; it is built (or loaded) when omitted.
    """
    check_runnable(recipe)
    assert recipe.method is not None
    models = models if models is not None else ModelStore()
    encoders = encoders if encoders is not None else EncoderLedger()
    searchable = (index if index is not None
                  else searchable_index(recipe, example, models, cache, encoders))  # fmt: skip
    ledger = Ledger()
    ctx = StageContext(
        llm=MeteredLLM(llm, ledger),
        models=models,
        index=searchable,
        retrieval=recipe.retrieval,
        ledger=ledger,
        encoders=encoders,
    )
    prediction = recipe.method(example, ctx)
    by_prompt = tuple(ledger.by_prompt().items())
    return attrs.evolve(prediction, usage=ledger.total(), usage_by_prompt=by_prompt,
                        notes=notes_of(recipe), encoder_usage=encoders.by_stage())  # fmt: skip


def retrieved_units(prediction: Prediction) -> list[int]:
    """Every unit a method retrieved, in order of first retrieval across its steps."""
    return list(dict.fromkeys(u for step in prediction.steps for u in step.retrieved))


def score(
    example: QAExample,
    prediction: Prediction,
    units: Sequence[Any],
    seconds: float,
    *,
    by_title: bool = False,
) -> RunRecord:
    """The record of one answered question; ``by_title`` scores retrieval from a shared corpus
    against the gold passages' titles."""
    answers = {}
    for named in prediction.answers:
        em, f1 = qa_scores(named.answer.text, example.answers)
        answers[named.name] = ScoredAnswer(named.answer.text, em, f1)
    _, gold = gold_items(example)
    retrieval = None
    if gold:
        ranked = [units[u] for u in retrieved_units(prediction)]
        scorer = title_retrieval_scores if by_title else retrieval_scores
        found = scorer(example, ranked, RECALL_KS)
        retrieval = RetrievalRecord(found.level, found.flat())
    return RunRecord(
        id=example.qid,
        dataset=example.dataset,
        question=example.question,
        question_type=example.question_type,
        gold=tuple(example.answers),
        answers=answers,
        retrieval=retrieval,
        trace=prediction,
        seconds=round(seconds, 3),
    )


def answer_and_score(
    recipe: Recipe,
    example: QAExample,
    llm: LLM,
    models: ModelStore,
    cache: IndexCache | None,
    shared: Searchable | None = None,
    built: Built | None = None,
) -> RunRecord:
    """Answer ``example`` over ``shared`` (a corpus index), or over its own passages' index
    (``built`` before the question started, else built or loaded now), and score it. Its
    seconds count its index's build wherever it was built."""
    if built is None:
        built = (Built(shared, EncoderLedger(), 0.0) if shared is not None
                 else builder(recipe, models, cache)(example, BUILDS))  # fmt: skip
    started, index = time.perf_counter(), built.index
    prediction = answer_question(recipe, example, llm, models=models, index=index,
                                 encoders=built.encoders)  # fmt: skip
    seconds = built.seconds + time.perf_counter() - started
    return score(example, prediction, units_of(index), seconds, by_title=shared is not None)


def ask(
    recipe: Recipe, question: str, passages: Sequence[Passage], *, cache_mode: CacheMode = "use"
) -> tuple[Prediction, Sequence[str]]:
    """``question`` answered over ``passages`` (``chainrag ask``): the prediction, and the
    texts of the index's units, which the trace's unit numbers index."""
    from chainrag.core.paths import llm_cache_path
    from chainrag.llm import open_llm

    example = QAExample("ask", "ask", question, tuple(passages))
    models, encoders = ModelStore(), EncoderLedger()
    index = searchable_index(recipe, example, models, IndexCache(), encoders)
    with open_llm(recipe.llm, cache_path=llm_cache_path(), cache_mode=cache_mode) as llm:
        prediction = answer_question(recipe, example, llm, models=models, index=index,
                                     encoders=encoders)  # fmt: skip
    return prediction, index.texts
