"""Edge builders of the sentence graph (ChainRAG §3.1). Each returns its own CSR matrix.

Entity co-occurrence (EC), semantic similarity (SS) and structural adjacency (SA): each an
n×n, symmetric, non-negative, zero-diagonal float32 CSR matrix, built by a small pure function
on arrays. Nothing here makes an n×n dense matrix: SS works on blocks of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
import numpy as np
from scipy import sparse

from chainrag.components.key_entities import rows_csr
from chainrag.registry import EDGE_BUILDERS
from chainrag.types import GraphInputs, ScoredEntity

Weighting = Literal["inverse_distance", "binary"]


def symmetric_csr(
    rows: np.ndarray, cols: np.ndarray, data: np.ndarray, n: int
) -> sparse.csr_matrix:
    """An n×n float32 CSR matrix holding each (row, col, value) and its mirror image."""
    coo = sparse.coo_matrix(
        (
            np.concatenate([data, data]),
            (np.concatenate([rows, cols]), np.concatenate([cols, rows])),
        ),
        shape=(n, n),
        dtype=np.float32,
    )
    out = coo.tocsr()
    out.sum_duplicates()
    out.sort_indices()
    return out


def adjacency_band(
    passages: Sequence[int], window: int, weighting: Weighting, cross_passages: bool
) -> sparse.csr_matrix:
    """Links sentences at most ``window`` apart in index order.

    Args:
        passages: Passage index of each sentence, in sentence order.
        window: Largest distance ``|i - j|`` linked (the paper: 3).
        weighting: ``inverse_distance`` gives weight 1/(d+1) (the authors' code); ``binary`` 1.
        cross_passages: Whether to link sentences of different passages.
    """
    passage = np.asarray(passages, dtype=np.int64)
    n = passage.shape[0]
    rows, cols, data = [], [], []
    for d in range(1, min(window, n - 1) + 1):
        i = np.arange(n - d)
        if not cross_passages:
            i = i[passage[i] == passage[i + d]]
        rows.append(i)
        cols.append(i + d)
        weight = 1.0 / (d + 1) if weighting == "inverse_distance" else 1.0
        data.append(np.full(i.shape[0], weight, dtype=np.float32))
    if not rows:
        return sparse.csr_matrix((n, n), dtype=np.float32)
    return symmetric_csr(np.concatenate(rows), np.concatenate(cols), np.concatenate(data), n)


@EDGE_BUILDERS.register("structural_adjacency")
@attrs.frozen
class StructuralAdjacency:
    """SA edges: sentences within ``window`` positions, inside one passage by default.

    ChainRAG §3.1 (|i−j| ≤ 3). Recipe: ``{kind: structural_adjacency, window: 3}``.
    """

    window: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    weighting: Weighting = "inverse_distance"
    cross_passages: bool = False

    def __call__(self, inputs: GraphInputs) -> sparse.csr_matrix:
        passages = [s.passage for s in inputs.sentences]
        return adjacency_band(passages, self.window, self.weighting, self.cross_passages)


# --------------------------------------------------------------------------- EC

EntityWeighting = Literal["binary", "count", "score_sum"]


def key_incidence(
    key_entities: Sequence[Sequence[ScoredEntity]], n: int
) -> tuple[sparse.csr_matrix, np.ndarray]:
    """(n × E) 0/1 incidence of sentences and key entities, and each entity's score.

    Sentences past the end of ``key_entities`` have none.
    """
    if len(key_entities) > n:
        raise ValueError(f"key entities for {len(key_entities)} sentences, but n = {n}")
    score_of = {e.name: e.score for row in key_entities for e in row}  # the last wins
    names = sorted(score_of)
    column = {name: j for j, name in enumerate(names)}
    cols = np.fromiter((column[e.name] for row in key_entities for e in row), dtype=np.int64)
    lengths = [len(row) for row in key_entities]
    incidence = rows_csr(cols, lengths, (n, len(names)), np.float32)
    incidence.data[:] = 1.0  # a name listed twice in one sentence still counts once
    scores = np.fromiter(map(score_of.__getitem__, names), dtype=np.float64, count=len(names))
    return incidence, scores


def cooccurrence_edges(
    incidence: sparse.csr_matrix, scores: np.ndarray, weighting: EntityWeighting
) -> sparse.csr_matrix:
    """Links sentences sharing a key entity: the pattern of ``K·Kᵀ`` without its diagonal.

    ``binary`` weighs every edge 1; ``count`` by the number of shared key entities;
    ``score_sum`` by the sum of their importance scores (the authors' code), plus 1e-6 so that
    sharing only entities of score 0 still makes an edge.
    """
    shared = sparse.csr_matrix(incidence @ incidence.T, dtype=np.float32)
    shared.data[np.repeat(np.arange(shared.shape[0]), np.diff(shared.indptr)) == shared.indices] = 0
    shared.eliminate_zeros()
    if weighting == "binary":
        shared.data[:] = 1.0
    elif weighting == "score_sum":
        weights = sparse.diags(np.maximum(scores, 0.0).astype(np.float32))
        summed = sparse.csr_matrix(incidence @ weights @ incidence.T, dtype=np.float32)
        pattern = shared.copy()
        pattern.data[:] = 1.0
        shared = sparse.csr_matrix(pattern.multiply(summed) + pattern * 1e-6, dtype=np.float32)
    shared.sort_indices()
    return shared


@EDGE_BUILDERS.register("entity_cooccurrence")
@attrs.frozen
class EntityCooccurrence:
    """EC edges: two sentences are linked iff their key-entity sets meet (§3.1).

    Recipe: ``{kind: entity_cooccurrence, weighting: binary}`` (``score_sum`` is the code's).
    """

    weighting: EntityWeighting = "binary"

    def __call__(self, inputs: GraphInputs) -> sparse.csr_matrix:
        incidence, scores = key_incidence(inputs.key_entities, len(inputs.sentences))
        return cooccurrence_edges(incidence, scores, self.weighting)


# --------------------------------------------------------------------------- SS

SimilarityWeighting = Literal["binary", "similarity"]


BLOCK_ELEMENTS = 1 << 22
"""At most this many similarities (16 MiB of float32) are held at once by the SS builder."""


def topk_similarity_edges(
    embeddings: np.ndarray, m: int, *, block: int = 4096
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row i, its ``m`` most similar other rows R_i, as (rows, cols, similarities).

    Similarity is the inner product (cosine for L2-normalised rows), computed ``block`` rows at
    a time (fewer when n is large, so that a block holds at most :data:`BLOCK_ELEMENTS`
    similarities: memory stays linear in n). Ties are broken by the lower index.
    """
    x = np.asarray(embeddings, dtype=np.float32)
    n = x.shape[0]
    k = min(m, n - 1)
    if k <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    block = max(1, min(block, BLOCK_ELEMENTS // n))
    rows, cols, sims = [], [], []
    for start in range(0, n, block):
        sim = x[start : start + block] @ x.T
        local = np.arange(sim.shape[0])
        sim[local, start + local] = -np.inf
        chosen = _top_k_lowest_index(sim, k)
        rows.append(np.repeat(start + local, k))
        cols.append(chosen.ravel())
        sims.append(np.take_along_axis(sim, chosen, axis=1).ravel())
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)


def _top_k_lowest_index(sim: np.ndarray, k: int) -> np.ndarray:
    """Column indexes of the k largest values per row; among equals, the lower index first."""
    extra = 1 if k < sim.shape[1] else 0  # one more than needed reveals a tie at the boundary
    values, chosen = _top_k(sim, k + extra)  # best first; equal values in any order
    # rows holding equal values (rare) are put in (value descending, index ascending) order
    tied_rows = np.nonzero((values[:, 1:] == values[:, :-1]).any(axis=1))[0]
    if tied_rows.size:
        order = np.lexsort((chosen[tied_rows], -values[tied_rows]), axis=1)
        chosen[tied_rows] = np.take_along_axis(chosen[tied_rows], order, axis=1)
        values[tied_rows] = np.take_along_axis(values[tied_rows], order, axis=1)
    boundary = np.nonzero(values[:, k - 1] == values[:, k])[0] if extra else tied_rows[:0]
    chosen = chosen[:, :k]
    for row in boundary:  # a tie at the boundary: keep the lowest indexes among the equals
        threshold = values[row, k - 1]
        above = np.nonzero(sim[row] > threshold)[0]
        equal = np.nonzero(sim[row] == threshold)[0][: k - above.size]
        picked = np.concatenate([above, equal])
        order = np.lexsort((picked, -sim[row, picked]))
        chosen[row] = picked[order]
    return chosen


def _top_k(sim: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, indexes) of the k largest per row, largest first, in no order among equals.

    Uses ``torch.topk`` on one thread when torch is installed (4× faster than a numpy
    partition), else ``np.argpartition``. One thread, because ``sim`` has just come from a
    multi-threaded BLAS product whose worker threads keep spinning on the other cores for tens
    of milliseconds after it returns: torch's own workers would compete with them for the cores
    (on 2 cores the same top-k took 15 ms on two threads right after the product, 11 ms on one,
    6 ms on two once the BLAS threads were idle).
    """
    try:
        import torch
    except ImportError:
        part = np.argpartition(sim, sim.shape[1] - k, axis=1)[:, -k:]
        values = np.take_along_axis(sim, part, axis=1)
        order = np.argsort(-values, axis=1)
        return np.take_along_axis(values, order, axis=1), np.take_along_axis(part, order, axis=1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # process-wide while it lasts: other torch work may run slower
    try:
        top = torch.topk(torch.from_numpy(np.ascontiguousarray(sim)), k, dim=1, sorted=True)
    finally:
        torch.set_num_threads(threads)
    return top.values.numpy(), top.indices.numpy().astype(np.int64)


def similarity_edges(
    rows: np.ndarray,
    cols: np.ndarray,
    sims: np.ndarray,
    n: int,
    *,
    mutual: bool,
    weighting: SimilarityWeighting,
) -> sparse.csr_matrix:
    """Symmetric SS edges from directed top-m choices: union (j ∈ R_i or i ∈ R_j) or mutual."""
    weight = np.ones_like(sims) if weighting == "binary" else np.maximum(sims, 0.0)
    chosen = sparse.csr_matrix((np.ones_like(sims), (rows, cols)), shape=(n, n), dtype=np.float32)
    values = sparse.csr_matrix((weight, (rows, cols)), shape=(n, n), dtype=np.float32)
    keep = chosen.multiply(chosen.T) if mutual else chosen + chosen.T > 0
    both = values.maximum(values.T)
    out = sparse.csr_matrix(both.multiply(keep), dtype=np.float32)
    out.eliminate_zeros()
    out.sort_indices()
    return out


@EDGE_BUILDERS.register("similarity_topk")
@attrs.frozen
class SimilarityTopK:
    """SS edges: link s_i and s_j if s_j is among the ``m`` most similar to s_i or vice versa.

    §3.1 (m = 10, union); ``mutual: true`` links only pairs that choose each other (the
    summary's reading). ``weighting: similarity`` weighs edges by max(cosine, 0), so pairs of
    non-positive similarity drop out. Recipe: ``{kind: similarity_topk, m: 10}``.
    """

    m: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    mutual: bool = False
    weighting: SimilarityWeighting = "binary"
    block: int = attrs.field(default=4096, validator=attrs.validators.ge(1))

    def __call__(self, inputs: GraphInputs) -> sparse.csr_matrix:
        n = len(inputs.sentences)
        if inputs.embeddings is None:
            raise ValueError("similarity_topk needs sentence embeddings: set index.embedder")
        if inputs.embeddings.shape[0] != n:
            raise ValueError(f"{inputs.embeddings.shape[0]} embeddings for {n} sentences")
        rows, cols, sims = topk_similarity_edges(inputs.embeddings, self.m, block=self.block)
        return similarity_edges(rows, cols, sims, n, mutual=self.mutual, weighting=self.weighting)
