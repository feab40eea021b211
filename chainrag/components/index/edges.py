"""Edge builders of the sentence graph (ChainRAG §3.1). Each returns its own CSR matrix.

Entity co-occurrence (EC), semantic similarity (SS) and structural adjacency (SA): each an
n×n, symmetric, non-negative, zero-diagonal float32 CSR matrix, built by a small pure function
on arrays. Nothing here makes an n×n dense matrix: SS works on blocks of rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import attrs
import numpy as np
from scipy import sparse

from chainrag.components.index.key_entities import rows_csr
from chainrag.components.retrieval.search import ExactSearch, top_k_lowest_index
from chainrag.core.errors import ChainragError
from chainrag.core.types import GraphInputs, ScoredEntity
from chainrag.protocols.index import VectorSearch
from chainrag.recipes.registry import EDGE_BUILDERS

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

MAX_EC_EDGES: int | None = 150_000_000
"""Default ceiling of an EC layer: 150M edges are 300M stored entries, 2.4 GB as float32 CSR
(built in place, so little more while it is built): room to spare on a 24 GiB machine."""

EC_BLOCK_PRODUCTS = 1 << 22
"""Rows of ``K·Kᵀ`` are computed in blocks whose rows share a key entity with at most about this
many sentences in all (Σ over the block's entries of the entity's sentence count), so that
scipy's work arrays for one block stay within tens of MiB; a costlier row is a block alone."""

NEAREST_HINTS = (1, 2, 3, 5, 10, 20, 50, 100)
"""``nearest`` values the too-large error considers suggesting."""


class LayerTooLargeError(ChainragError):
    """An edge layer would hold more edges than its builder's ``max_edges`` allows."""


def key_incidence(
    key_entities: Sequence[Sequence[ScoredEntity]], n: int
) -> tuple[sparse.csr_matrix, np.ndarray]:
    """(n × E) 0/1 incidence of sentences and key entities, and each entity's score.

    Columns are the key entities' names in sorted order (:func:`key_names`). Sentences past
    the end of ``key_entities`` have none.
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


def key_names(key_entities: Sequence[Sequence[ScoredEntity]]) -> list[str]:
    """The names of the columns of :func:`key_incidence`."""
    return sorted({e.name for row in key_entities for e in row})


def sentence_counts(incidence: sparse.csr_matrix) -> np.ndarray:
    """How many sentences each key entity (column of ``incidence``) is key in."""
    return np.bincount(incidence.indices, minlength=incidence.shape[1]).astype(np.int64)


def without_frequent(incidence: sparse.csr_matrix, max_sentences: int) -> sparse.csr_matrix:
    """``incidence`` with the columns of key entities in more than ``max_sentences`` sentences
    emptied (the columns stay, so scores and names still line up)."""
    keep = (sentence_counts(incidence) <= max_sentences).astype(np.float32)
    out = sparse.csr_matrix(incidence @ sparse.diags(keep), dtype=np.float32)
    out.eliminate_zeros()
    return out


def cooccurrence_bounds(counts: np.ndarray) -> tuple[int, int]:
    """(lower, upper) bounds of the entries :func:`cooccurrence_edges` stores (each edge twice)
    from the key entities' sentence counts: the pairs of the entity in most sentences, and
    ``Σ_e df_e·(df_e − 1)`` (equal when no two entities' sentence pairs overlap)."""
    pairs = counts * (counts - 1)
    return int(pairs.max(initial=0)), int(pairs.sum())


def row_blocks(costs: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` row ranges covering every row; each block's rows after its
    first cost less than ``budget`` in all."""
    n = costs.shape[0]
    if n == 0:
        return []
    block_of = (np.cumsum(costs.astype(np.int64)) - 1) // max(budget, 1)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(block_of)) + 1, [n]]).tolist()
    return [(starts[i], starts[i + 1]) for i in range(len(starts) - 1)]


def cooccurrence_edges(
    incidence: sparse.csr_matrix,
    scores: np.ndarray,
    weighting: EntityWeighting,
    *,
    max_entries: int | None = None,
    names: Callable[[], Sequence[str]] | None = None,
    block_products: int = EC_BLOCK_PRODUCTS,
) -> sparse.csr_matrix:
    """Links sentences sharing a key entity: the pattern of ``K·Kᵀ`` without its diagonal.

    ``binary`` weighs every edge 1; ``count`` by the number of shared key entities;
    ``score_sum`` by the sum of their importance scores (the authors' code), plus 1e-6 so that
    sharing only entities of score 0 still makes an edge. Computed by blocks of rows
    (``block_products``); the result does not depend on the blocks.

    Raises:
        LayerTooLargeError: The layer would store more than ``max_entries`` entries (each edge
            twice); raised before any product when the most frequent entity alone passes it,
            else as soon as the blocks computed pass it. ``names`` gives the names of the
            columns, to name the entities in the message (called only then).
    """
    counts = sentence_counts(incidence)
    lower, upper = cooccurrence_bounds(counts)
    if max_entries is not None and lower > max_entries:
        raise ec_too_large(counts, names, (lower, upper), max_entries)
    transposed = incidence.T.tocsr()
    weights = sparse.diags(np.maximum(scores, 0.0).astype(np.float32))
    blocks = (
        (stop, _cooccurrence_rows(incidence[start:stop], start, transposed, weights, weighting))
        for start, stop in row_blocks(incidence @ counts, block_products)
    )
    capacity = upper if max_entries is None else min(upper, max_entries)
    out = stacked_rows(blocks, incidence.shape[0], capacity)
    if isinstance(out, tuple):  # past the capacity, so past max_entries: never past upper
        assert max_entries is not None
        raise ec_too_large(counts, names, (out[0], upper), max_entries, done=out[1])
    return out


def stacked_rows(
    blocks: Iterable[tuple[int, sparse.csr_matrix]], n: int, capacity: int
) -> sparse.csr_matrix | tuple[int, int]:
    """The n×n CSR matrix whose rows are those of ``blocks`` ((rows done, block) pairs, in
    order), written into arrays of ``capacity`` entries as the blocks come: memory holds the
    result and one block, not the blocks and a joined copy (``np.empty`` takes its pages only
    as they are written). Blocks that do not fit: (entries so far, rows done) instead.
    """
    index = np.int32 if max(capacity, n) < 2**31 else np.int64
    indptr = np.zeros(n + 1, dtype=index)
    indices, data = np.empty(capacity, dtype=index), np.empty(capacity, dtype=np.float32)
    at, row = 0, 0
    for done, block in blocks:
        stop = at + block.nnz
        if stop > capacity:
            return stop, done
        indices[at:stop], data[at:stop] = block.indices, block.data
        indptr[row + 1 : done + 1] = block.indptr[1:] + at
        at, row = stop, done
    if at < capacity * 0.8:  # give back a reservation much larger than the result
        indices, data = indices[:at].copy(), data[:at].copy()
    out = sparse.csr_matrix((data[:at], indices[:at], indptr), shape=(n, n))
    out.has_sorted_indices = True  # each block's are sorted
    return out


def _cooccurrence_rows(
    rows: sparse.csr_matrix,
    start: int,
    transposed: sparse.csr_matrix,
    weights: sparse.dia_matrix,
    weighting: EntityWeighting,
) -> sparse.csr_matrix:
    """Rows ``start …`` of the EC layer, from those rows of the incidence and its transpose."""
    shared = sparse.csr_matrix(rows @ transposed, dtype=np.float32)
    row_of = np.repeat(np.arange(start, start + shared.shape[0]), np.diff(shared.indptr))
    shared.data[row_of == shared.indices] = 0
    shared.eliminate_zeros()
    if weighting == "binary":
        shared.data[:] = 1.0
    elif weighting == "score_sum":
        summed = sparse.csr_matrix(rows @ weights @ transposed, dtype=np.float32)
        pattern = shared.copy()
        pattern.data[:] = 1.0
        shared = sparse.csr_matrix(pattern.multiply(summed) + pattern * 1e-6, dtype=np.float32)
    shared.sort_indices()
    return shared


def nearest_pairs(
    incidence: sparse.csr_matrix, nearest: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each key entity, its sentences in index order s_0 < s_1 < …: every pair (s_p, s_q)
    with p < q ≤ p + ``nearest``, as (rows, cols, entity) arrays — ``Σ_e Σ_d (df_e − d)``
    pairs (:func:`nearest_pair_count`), never ``df²``."""
    by_entity = incidence.tocsc()
    by_entity.sort_indices()
    sentence = by_entity.indices.astype(np.int64)
    entity = np.repeat(np.arange(by_entity.shape[1]), np.diff(by_entity.indptr))
    longest = int(np.diff(by_entity.indptr).max(initial=0))
    rows, cols, which = [sentence[:0]], [sentence[:0]], [entity[:0]]
    for d in range(1, min(nearest, longest - 1) + 1):
        same = entity[:-d] == entity[d:]
        rows.append(sentence[:-d][same])
        cols.append(sentence[d:][same])
        which.append(entity[:-d][same])
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(which)


def nearest_pair_count(counts: np.ndarray, nearest: int) -> int:
    """How many pairs :func:`nearest_pairs` makes from these sentence counts."""
    m = np.clip(counts - 1, 0, nearest)
    return int((m * counts - m * (m + 1) // 2).sum())


def nearest_cooccurrence_edges(
    incidence: sparse.csr_matrix,
    scores: np.ndarray,
    weighting: EntityWeighting,
    nearest: int,
    *,
    max_entries: int | None = None,
    names: Callable[[], Sequence[str]] | None = None,
) -> sparse.csr_matrix:
    """EC edges through each key entity only between its ``nearest``-closest sentences in
    index order (:func:`nearest_pairs`), symmetric; weights as :func:`cooccurrence_edges`,
    counting only the entities a pair is linked through.

    Raises:
        LayerTooLargeError: The pairs, stored both ways, would pass ``max_entries``.
    """
    counts = sentence_counts(incidence)
    pairs = nearest_pair_count(counts, nearest)
    if max_entries is not None and 2 * pairs > max_entries:
        most = nearest_pair_count(counts.max(initial=0, keepdims=True), nearest)
        raise ec_too_large(counts, names, (2 * most, 2 * pairs), max_entries, nearest=nearest)
    rows, cols, entity = nearest_pairs(incidence, nearest)
    if weighting == "score_sum":
        data = np.maximum(scores, 0.0).astype(np.float32)[entity]
    else:
        data = np.ones(entity.shape[0], dtype=np.float32)
    out = symmetric_csr(rows, cols, data, incidence.shape[0])
    if weighting == "binary":
        out.data[:] = 1.0
    elif weighting == "score_sum":
        out.data += np.float32(1e-6)
    return out


def ec_too_large(
    counts: np.ndarray,
    names: Callable[[], Sequence[str]] | None,
    stored: tuple[int, int],
    max_entries: int,
    *,
    done: int | None = None,
    nearest: int | None = None,
) -> LayerTooLargeError:
    """The error for an EC layer of ``stored`` = (at least, at most) entries, each edge twice:
    how many edges and how much memory, the key entities in most sentences, what bounds it."""
    low, high = -(-stored[0] // 2), stored[1] // 2  # each edge is stored twice
    size = f"{low:,}" if low == high else f"between {low:,} and {high:,}"
    where = f" (at least {low:,} in its first {done:,} rows)" if done is not None else ""
    gib = [entries * (8 if entries < 2**31 else 12) / 2**30 for entries in stored]
    memory = f"{gib[0]:.1f}" if low == high else f"{gib[0]:.1f}–{gib[1]:.1f}"
    column = list(names()) if names is not None else []
    top = np.argsort(-counts, kind="stable")[:5].tolist()
    hubs = ", ".join(
        f"{column[j] if j < len(column) else f'#{j}'!r} ({counts[j]:,}{' sentences' * (r == 0)})"
        for r, j in enumerate(top)
    )
    layer = f"entity_cooccurrence, nearest: {nearest}" if nearest else "entity_cooccurrence"
    return LayerTooLargeError(
        f"the EC layer ({layer}) would hold {size} edges{where}, {memory} GiB as a float32 "
        f"CSR matrix: more than its max_edges, {max_entries // 2:,}. A key entity in d "
        f"sentences links all d(d−1)/2 pairs of them; the largest: {hubs}. Bound the layer "
        f"with entity_cooccurrence's {ec_bounds_hint(counts, max_entries)}; or keep fewer "
        "entity types (index.ner.labels, e.g. without NORP, ORDINAL, CARDINAL, DATE); or "
        "raise max_edges where the memory is there"
    )


def ec_bounds_hint(counts: np.ndarray, max_entries: int) -> str:
    """``max_sentences: N`` and ``nearest: K`` values under which the layer fits (as far as
    :func:`cooccurrence_bounds` and :func:`nearest_pair_count` can tell)."""
    ordered = np.sort(counts)
    within = np.cumsum(ordered * (ordered - 1)) <= max_entries
    fits = int(ordered[within][-1]) if within.any() else 1
    dropped = int((counts > fits).sum())
    entities = "key entity" if dropped == 1 else "key entities"
    hint = f"max_sentences: {fits:,} or less (no EC edges from {dropped:,} {entities} then)"
    nearest = [k for k in NEAREST_HINTS if 2 * nearest_pair_count(counts, k) <= max_entries]
    return hint + (f", or nearest: {nearest[-1]} or less" if nearest else "")


_POSITIVE_OR_NONE = attrs.validators.optional(attrs.validators.ge(1))


@EDGE_BUILDERS.register("entity_cooccurrence")
@attrs.frozen
class EntityCooccurrence:
    """EC edges: two sentences are linked iff their key-entity sets meet (§3.1).

    The default is the paper's, unbounded: a key entity in f·n sentences makes (f·n)² pairs.
    Two bounds, for a shared corpus (both count a key entity's sentences after the α filter):

    - ``max_sentences``: a key entity that is key in more than this many sentences makes no
      EC edges (its sentences may still be linked through other key entities they share).
    - ``nearest``: list each key entity's sentences in index (corpus) order; each is linked
      through it only to the ``nearest`` before and the ``nearest`` after it in that list
      (rank distance, not index distance): at most 2·nearest EC neighbours per key entity,
      O(df·nearest) pairs, a subset of the unbounded layer. Each entity's sentences stay
      connected (a chain at ``nearest: 1``), so what EC reaches in several hops is unchanged.

    ``max_sentences`` applies first. ``max_edges`` (undirected edges; None: no limit) turns a
    layer too large for memory into a :class:`LayerTooLargeError` that says why, not an
    out-of-memory kill. Weights count only the entities an edge is made through.
    Recipe: ``{kind: entity_cooccurrence, weighting: binary}`` (``score_sum`` is the code's);
    bounded: ``{kind: entity_cooccurrence, nearest: 10}``.
    """

    weighting: EntityWeighting = "binary"
    max_sentences: int | None = attrs.field(default=None, validator=_POSITIVE_OR_NONE)
    nearest: int | None = attrs.field(default=None, validator=_POSITIVE_OR_NONE)
    max_edges: int | None = attrs.field(default=MAX_EC_EDGES, validator=_POSITIVE_OR_NONE)

    def __call__(self, inputs: GraphInputs) -> sparse.csr_matrix:
        incidence, scores = key_incidence(inputs.key_entities, len(inputs.sentences))
        if self.max_sentences is not None:
            incidence = without_frequent(incidence, self.max_sentences)
        limit = None if self.max_edges is None else 2 * self.max_edges
        names = functools.partial(key_names, inputs.key_entities)
        if self.nearest is None:
            return cooccurrence_edges(
                incidence, scores, self.weighting, max_entries=limit, names=names
            )
        return nearest_cooccurrence_edges(
            incidence, scores, self.weighting, self.nearest, max_entries=limit, names=names
        )


# --------------------------------------------------------------------------- SS

SimilarityWeighting = Literal["binary", "similarity"]


BLOCK_ELEMENTS = 1 << 22
"""At most this many similarities (16 MiB of float32) are held at once by the SS builder."""

WHOLE_ROWS = 8192
"""Up to this many sentences an SS query block spans whole rows of similarities, at most
:data:`BLOCK_ELEMENTS` of them: the blocks :func:`topk_similarity_edges` uses, so exact search
gives its edges to the bit. Past it, blocks of ``block`` rows, tiled over columns by the search
(the old rule shrank them to ``BLOCK_ELEMENTS // n`` rows: 4 at a time at 1M sentences)."""


def topk_similarity_edges(
    embeddings: np.ndarray, m: int, *, block: int = 4096
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row i, its ``m`` most similar other rows R_i, as (rows, cols, similarities).

    Similarity is the inner product (cosine for L2-normalised rows), computed ``block`` rows at
    a time (fewer when n is large, so that a block holds at most :data:`BLOCK_ELEMENTS`
    similarities: memory stays linear in n). Ties are broken by the lower index. The reference
    for :func:`nearest_others`, which does the same at any n.
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
        chosen = top_k_lowest_index(sim, k)
        rows.append(np.repeat(start + local, k))
        cols.append(chosen.ravel())
        sims.append(np.take_along_axis(sim, chosen, axis=1).ravel())
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)


def query_rows(n: int, block: int) -> int:
    """Rows per SS query block for n sentences (see :data:`WHOLE_ROWS`)."""
    return max(1, min(block, BLOCK_ELEMENTS // n)) if n <= WHOLE_ROWS else block


def nearest_others(
    embeddings: np.ndarray, m: int, search: VectorSearch, *, block: int = 4096
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row i, its ``m`` most similar other rows by ``search``, as (rows, cols, sims).

    With exact search, :func:`topk_similarity_edges`'s result at any n, in bounded memory.
    An approximate search may find fewer than m for a row. In-memory embeddings are made
    float32 once, as before; a memory map is converted a block of rows at a time.
    """
    x = embeddings if isinstance(embeddings, np.memmap) else np.asarray(embeddings, np.float32)
    n = x.shape[0]
    k = min(m, n - 1)
    if k <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    ids, sims = search(x).self_join(k, query_rows(n, block))
    keep = ids >= 0
    return np.nonzero(keep)[0], ids[keep], sims[keep]


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
    non-positive similarity drop out. ``search`` finds the m most similar: ``exact`` (the
    paper's; memory bounded at any n) or approximate (``blocked_ivf``, ``faiss_hnsw``,
    ``faiss_ivf``) for large corpora; ``block`` sentences are searched at a time. Recipe:
    ``{kind: similarity_topk, m: 10}``, or ``{kind: similarity_topk, m: 10, search: {kind:
    blocked_ivf, nprobe: 24}}``.
    """

    m: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    mutual: bool = False
    weighting: SimilarityWeighting = "binary"
    block: int = attrs.field(default=4096, validator=attrs.validators.ge(1))
    search: VectorSearch = attrs.field(factory=ExactSearch)

    def __call__(self, inputs: GraphInputs) -> sparse.csr_matrix:
        n = len(inputs.sentences)
        if inputs.embeddings is None:
            raise ValueError("similarity_topk needs sentence embeddings: set index.embedder")
        if inputs.embeddings.shape[0] != n:
            raise ValueError(f"{inputs.embeddings.shape[0]} embeddings for {n} sentences")
        rows, cols, sims = nearest_others(inputs.embeddings, self.m, self.search, block=self.block)
        return similarity_edges(rows, cols, sims, n, mutual=self.mutual, weighting=self.weighting)
