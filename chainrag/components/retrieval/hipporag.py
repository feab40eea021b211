"""HippoRAG's retrieval as a seed retriever (Gutiérrez et al. 2024, §3.2; the authors'
``HippoRAG.rank_docs`` without its ensemble with dense scores, which their experiments leave
off): over the phrase graph of the index's units, link the query's entities, run the ranker
(Personalized PageRank), score each unit by its phrases' probabilities weighted by its counts,
min-max normalise, and return the top ``k``.

The phrase graph is built on the first query over an index (OpenIE of every unit, read once per
passage text and LLM through the OpenIE's store) and kept in ``ctx.index_data`` while the index
lives: every retrieval of a question reuses it. Over a shared corpus index each question's
context builds it again from the stored extractions (no LLM call; the phrases are embedded
again).
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from chainrag.components.phrases.graph import HippoRAGGraph
from chainrag.components.phrases.linking import QueryNERLinker
from chainrag.components.phrases.openie import LLMOpenIE
from chainrag.components.phrases.pagerank import PersonalizedPageRank
from chainrag.core.phrase_graph import PhraseGraph
from chainrag.core.types import Hit, PhraseGraphStats
from chainrag.protocols.context import Context
from chainrag.protocols.phrases import EntityLinker, OpenIE, PhraseGraphBuilder, PhraseRanker
from chainrag.protocols.units import Searchable
from chainrag.recipes.registry import SEED_RETRIEVERS


def min_max(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(x - min) / (max - min)`` (the code's ``min_max_normalize``); all zeros where every
    score is the same (the code divides by zero there: every score NaN, ranked alike)."""
    if scores.size == 0:
        return scores
    low, high = scores.min(), scores.max()
    if high == low:
        return np.zeros_like(scores)
    out: NDArray[np.float64] = (scores - low) / (high - low)
    return out


def ranked_hits(scores: NDArray[np.float64], k: int) -> tuple[Hit, ...]:
    """The ``k`` best units as the code ranks them: ``argsort(kind='mergesort')[::-1]``, so
    equal scores come in descending unit order."""
    order = np.argsort(scores, kind="mergesort")[::-1][:k]
    return tuple(Hit(int(i), float(scores[i])) for i in order)


def passage_scores(graph: PhraseGraph, probabilities: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each passage's score: its phrase counts times the phrases' probabilities, min-max
    normalised (the code's ``docs_to_facts @ (facts_to_phrases @ ppr)``)."""
    out: NDArray[np.float64] = np.asarray(graph.passage_phrases @ probabilities, dtype=np.float64)
    return min_max(out.reshape(-1))


@SEED_RETRIEVERS.register("hipporag", example={"k": 2})
@attrs.frozen
class HippoRAGRetriever:
    """HippoRAG's retrieval (§3.2): units ranked by their phrases' PageRank from the query.

    The query's entities are linked into the phrase graph of the index's units, the ranker
    gives each phrase a probability from them, and each unit is scored by its phrases; a
    query with no entity scores every unit alike (1/n), as the code does.
    Recipe: ``{kind: hipporag, k: 10, linker: {kind: query_ner}}``.
    """

    k: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    """Units returned (the code's ``--top_k``)."""
    open_ie: OpenIE = attrs.field(factory=LLMOpenIE)
    """What reads each unit's entities and triples."""
    graph: PhraseGraphBuilder = attrs.field(factory=HippoRAGGraph)
    """What builds the phrase graph from them."""
    linker: EntityLinker = attrs.field(factory=QueryNERLinker)
    """What links a query into the graph (and weighs the phrases it links)."""
    ranker: PhraseRanker = attrs.field(factory=PersonalizedPageRank)
    """What gives each phrase a probability from the linked ones."""

    def __call__(self, query: str, index: Searchable, ctx: Context) -> tuple[Hit, ...]:
        graph = self.phrase_graph(index, ctx)
        n = len(index.texts)
        linking = self.linker(query, graph, index.embedder, ctx)
        if not linking.reset.any():
            return ranked_hits(np.full(n, 1.0 / max(n, 1)), self.k)
        return ranked_hits(passage_scores(graph, self.ranker(graph, linking.reset)), self.k)

    def phrase_graph(self, index: Searchable, ctx: Context) -> PhraseGraph:
        """The phrase graph of ``index``'s units, built once while the index lives."""

        def build() -> PhraseGraph:
            extractions = self.open_ie(list(index.texts), ctx)
            return self.graph(extractions, index.embedder, ctx)

        made: PhraseGraph = ctx.index_data.get(
            index, ("phrase graph", self.open_ie, self.graph), build
        )
        return made

    def graph_stats(self, index: Searchable, ctx: Context) -> PhraseGraphStats:
        """What the phrase graph of ``index`` was built from."""
        return self.phrase_graph(index, ctx).stats
