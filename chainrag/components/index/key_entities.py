"""Key-entity scoring (ChainRAG §3.1): keep the top α% of each sentence's entities by BM25.

The importance of an entity, as docs/decisions.md records the authors' code: build a BM25 index over
the per-sentence entity lists and take the mean, over all sentences, of the BM25 score of the
one-token query "entity". That mean is ``idf(e) / n · Σ_d tf·(k1+1) / (tf + k1·(1−b+b·|d|/avgdl))``,
computed here for every entity at once on a sparse count matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from chainrag.core.types import FloatArray, ScoredEntity
from chainrag.recipes.registry import KEY_ENTITY_SCORERS


def rows_csr(
    cols: np.ndarray, lengths: Sequence[int], shape: tuple[int, int], dtype: type = np.float64
) -> sparse.csr_matrix:
    """A CSR count matrix from each row's column indexes, given row by row (``lengths[i]`` of
    them for row i; rows past ``len(lengths)`` are empty); repeated columns are summed."""
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    sizes = np.fromiter(lengths, dtype=np.int64, count=len(lengths))
    np.cumsum(sizes, out=indptr[1 : len(lengths) + 1])
    indptr[len(lengths) + 1 :] = indptr[len(lengths)]
    out = sparse.csr_matrix((np.ones(cols.size, dtype=dtype), cols, indptr), shape=shape)
    out.sum_duplicates()
    return out


def entity_vocabulary(entities: Sequence[Sequence[str]]) -> tuple[list[str], sparse.csr_matrix]:
    """Sorted entity names and the (n sentences × n entities) count matrix."""
    flat = [e for row in entities for e in row]
    names = sorted(set(flat))
    column = {name: j for j, name in enumerate(names)}
    cols = np.fromiter(map(column.__getitem__, flat), dtype=np.int64, count=len(flat))
    counts = rows_csr(cols, [len(row) for row in entities], (len(entities), len(names)))
    return names, counts


def bm25_importance(
    counts: sparse.csr_matrix, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
) -> FloatArray:
    """Mean BM25 score over all sentences of each entity as a one-token query.

    IDF as rank_bm25's BM25Okapi: ``log((n − df + 0.5) / (df + 0.5))``, with negative values
    replaced by ``epsilon`` × the mean IDF.
    """
    n, n_entities = counts.shape
    if n == 0 or n_entities == 0:
        return np.zeros(n_entities, dtype=np.float32)
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    avgdl = lengths.mean() if lengths.mean() > 0 else 1.0
    df = np.diff(counts.tocsc().indptr).astype(np.float64)
    idf = np.log((n - df + 0.5) / (df + 0.5))
    idf = np.where(idf < 0, epsilon * idf.mean(), idf)
    coo = counts.tocoo()
    tf = coo.data
    norm = k1 * (1 - b + b * lengths[coo.row] / avgdl)
    per_entry = tf * (k1 + 1) / (tf + norm)
    sums = np.bincount(coo.col, weights=per_entry, minlength=n_entities)
    importance: FloatArray = (idf * sums / n).astype(np.float32)
    return importance


def top_fraction(count: int | NDArray[np.int64], alpha: float) -> NDArray[np.int64]:
    """How many of ``count`` entities are key at α%: ⌈α/100 · count⌉ (one at least, if any);
    for each of an array of counts, as :func:`key_columns` asks it of every sentence."""
    counts = np.asarray(count, dtype=np.int64)
    kept: NDArray[np.int64] = np.minimum(counts, np.ceil(alpha / 100 * counts - 1e-9)).astype(
        np.int64
    )
    return kept


@KEY_ENTITY_SCORERS.register("bm25")
@attrs.frozen
class BM25KeyEntities:
    """Keeps the top ``alpha``% of each sentence's entities by BM25 importance (§3.1).

    ``alpha: 100`` keeps every entity: what the authors' code effectively does.
    Ties are broken by name, so the result does not depend on sentence order.
    Recipe: ``{kind: bm25, alpha: 60}``.
    """

    alpha: float = attrs.field(
        default=60.0, validator=[attrs.validators.gt(0.0), attrs.validators.le(100.0)]
    )
    k1: float = attrs.field(default=1.5, validator=attrs.validators.ge(0.0))
    b: float = attrs.field(
        default=0.75, validator=[attrs.validators.ge(0.0), attrs.validators.le(1.0)]
    )
    epsilon: float = 0.25

    def __call__(self, entities: Sequence[Sequence[str]]) -> tuple[tuple[ScoredEntity, ...], ...]:
        names, counts = entity_vocabulary(entities)
        scores = bm25_importance(counts, self.k1, self.b, self.epsilon)
        kept = key_columns(counts, scores, self.alpha)
        is_kept = kept >= 0
        made = {
            j: ScoredEntity(names[j], float(scores[j])) for j in np.unique(kept[is_kept]).tolist()
        }
        flat = list(map(made.__getitem__, kept[is_kept].tolist()))  # sentence by sentence
        sentence = np.repeat(np.arange(len(entities)), np.diff(counts.indptr))
        ends = np.cumsum(np.bincount(sentence[is_kept], minlength=len(entities))).tolist()
        return tuple(tuple(flat[a:b]) for a, b in zip([0, *ends], ends, strict=False))


def key_columns(counts: sparse.csr_matrix, scores: np.ndarray, alpha: float) -> np.ndarray:
    """For each stored (sentence, entity) entry, in CSR order: the entity's column if it is
    among the sentence's top ⌈α%⌉ by score (ties by name), else −1 — and each sentence's
    kept columns come first, best first."""
    n = counts.shape[0]
    rows = np.repeat(np.arange(n), np.diff(counts.indptr))
    cols = counts.indices
    order = np.lexsort((cols, -scores[cols], rows))  # by sentence, then score, then name
    per_row = np.diff(counts.indptr)
    keep_n = top_fraction(per_row, alpha)
    rank = np.arange(cols.size) - np.repeat(counts.indptr[:-1], per_row)
    sorted_cols = cols[order]
    return np.where(rank < np.repeat(keep_n, per_row), sorted_cols, -1)
