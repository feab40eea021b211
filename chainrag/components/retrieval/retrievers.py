"""Seed retrieval (ChainRAG §3.2, step 1): dense scores → candidates → reranker → top-k.

The dense scores of all units come from one matrix product (``search: {kind: exact}``, the
default), or from a vector index (``faiss_hnsw``, ``faiss_ivf``: approximate, for corpus
indexes of a million sentences); the ``candidates`` best (the paper: 100) go to the reranker,
and its ``k`` best (the paper: 3) are the seeds. With ``hybrid: true`` the candidates are a
reciprocal-rank fusion of the dense ranking and a BM25 ranking (bm25s).
The same retriever serves the sentence graph and chunk mode: it only needs a ``Searchable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from chainrag.components.retrieval.rerankers import NoRerank
from chainrag.components.retrieval.search import ExactSearch
from chainrag.components.retrieval.vectors import query_vector
from chainrag.core.types import FloatArray, Hit
from chainrag.protocols.context import Context
from chainrag.protocols.index import VectorIndex, VectorSearch
from chainrag.protocols.retrieval import Reranker
from chainrag.protocols.units import KeepsVectorIndexes, Searchable
from chainrag.recipes.registry import SEED_RETRIEVERS


def top_k_hits(scores: np.ndarray, k: int) -> tuple[Hit, ...]:
    """The ``k`` best units by score, best first; equal scores in index order."""
    scores = np.asarray(scores, dtype=np.float64)
    k = min(k, scores.shape[0])
    if k <= 0:
        return ()
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(k)
    threshold = scores[part].min()
    pool = np.nonzero(scores >= threshold)[0]  # all ties at the boundary, then cut in order
    order = pool[np.lexsort((pool, -scores[pool]))][:k]
    return tuple(Hit(int(i), float(scores[i])) for i in order)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], n: int, k: int = 60) -> FloatArray:
    """RRF scores of ``n`` units: Σ over rankings of 1 / (k + rank), rank from 1."""
    fused = np.zeros(n, dtype=np.float64)
    for ranking in rankings:
        for rank, unit in enumerate(ranking, 1):
            fused[unit] += 1.0 / (k + rank)
    out: FloatArray = fused.astype(np.float32)
    return out


def bm25_scores(query: str, index: Searchable, ctx: Context) -> np.ndarray:
    """BM25 scores of every text of ``index`` for ``query`` (bm25s; its BM25 index is built
    once per index and kept in ``ctx.index_data`` while the index lives)."""
    import bm25s

    texts = index.texts

    def build() -> Any:
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(list(texts), show_progress=False), show_progress=False)
        return retriever

    retriever = ctx.index_data.get(index, "bm25s", build)
    tokens = bm25s.tokenize([query], show_progress=False, return_ids=False)[0]
    known = [t for t in tokens if t in retriever.vocab_dict]
    if not known:
        return np.zeros(len(texts))
    return np.asarray(retriever.get_scores(known), dtype=np.float64)


def vector_index(index: Searchable, search: VectorSearch, ctx: Context) -> VectorIndex | None:
    """The vector index ``search`` makes of ``index``'s embeddings, or None where the plain
    inner products serve (exact search of an index held in memory: one matrix product).

    A corpus index keeps its vector indexes on disk (built once per search); for an index in
    memory one is built per index and kept in ``ctx.index_data`` while the index lives.
    """
    if isinstance(index, KeepsVectorIndexes):
        return index.vector_index(search)
    if isinstance(search, ExactSearch):
        return None
    embeddings = index.embeddings
    return ctx.index_data.get(index, ("vector_index", search), lambda: search(embeddings))


@SEED_RETRIEVERS.register("dense_rerank", example={"k": 2, "candidates": 4})
@attrs.frozen
class DenseRerank:
    """Dense inner-product candidates, reranked, top-k seeds (§3.2: 100 candidates, k = 3).

    Recipe: ``{kind: dense_rerank, candidates: 100, k: 3, reranker: {kind: none}}``.
    """

    k: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    candidates: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    reranker: Reranker = attrs.field(factory=NoRerank)
    hybrid: bool = False
    rrf_k: int = attrs.field(default=60, validator=attrs.validators.ge(1))
    search: VectorSearch = attrs.field(factory=ExactSearch)

    def __attrs_post_init__(self) -> None:
        if self.hybrid and not isinstance(self.search, ExactSearch):
            raise ValueError(
                "hybrid: true fuses the dense and BM25 rankings of every unit, so it never "
                f"uses its search ({type(self.search).__name__}); drop one of the two"
            )

    def candidate_hits(self, query: str, index: Searchable, ctx: Context) -> tuple[Hit, ...]:
        """The first stage: dense (or hybrid) candidates, best first."""
        n = len(index.texts)
        if n == 0:
            return ()
        q = query_vector(index, query, ctx)
        if not self.hybrid and (searcher := vector_index(index, self.search, ctx)) is not None:
            ids, sims = searcher.search(q, self.candidates)
            return tuple(
                Hit(int(i), float(v)) for i, v in zip(ids[0], sims[0], strict=True) if i >= 0
            )
        dense = np.asarray(index.embeddings @ q[0])
        if not self.hybrid:
            return top_k_hits(dense, self.candidates)
        lexical = bm25_scores(query, index, ctx)
        rankings = [[h.index for h in top_k_hits(s, n)] for s in (dense, lexical)]
        return top_k_hits(reciprocal_rank_fusion(rankings, n, self.rrf_k), self.candidates)

    def __call__(self, query: str, index: Searchable, ctx: Context) -> tuple[Hit, ...]:
        hits = self.candidate_hits(query, index, ctx)
        texts = [index.texts[h.index] for h in hits]
        return tuple(self.reranker(query, hits, texts, ctx)[: self.k])
