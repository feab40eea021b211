"""Top-k maths shared by every vector search: best first, equal similarities by lower id,
running top-k merges of tiles, the exact tiled top-k and the self-join by blocks of queries."""

from __future__ import annotations

import contextlib
import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from chainrag.core.types import FloatArray

IntArray = NDArray[np.int64]

FORMAT = "chainrag.vector_index"
"""Format name written in the file an exact index saves."""

_EMPTY = np.iinfo(np.int64).max
"""Id of an empty slot while merging: it sorts after every real id of equal similarity."""


def float32_rows(vectors: np.ndarray, start: int, stop: int) -> FloatArray:
    """Rows ``start:stop`` as float32: a view when they are float32 already, else a copy."""
    out: FloatArray = np.asarray(vectors[start:stop], dtype=np.float32)
    return out


def spans(n: int, width: int) -> list[tuple[int, int]]:
    """``[0, n)`` cut into ⌈n / width⌉ spans of nearly equal length (no tiny last one)."""
    parts = max(1, -(-n // max(width, 1)))
    bounds = [i * n // parts for i in range(parts + 1)]
    return list(itertools.pairwise(bounds))


def top_k_lowest_index(sim: np.ndarray, k: int) -> np.ndarray:
    """Column indexes of the k largest values per row; among equals, the lower index first."""
    extra = 1 if k < sim.shape[1] else 0  # one more than needed reveals a tie at the boundary
    values, chosen = top_k(sim, k + extra)  # best first; equal values in any order
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


TORCH_FROM = 1 << 20
"""Similarities in one top-k from which torch is imported for it (a corpus build's tiles); a
question's graph (a few hundred sentences) stays with numpy unless torch is loaded already."""


def top_k(sim: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, indexes) of the k largest per row, largest first, in no order among equals.

    Uses ``torch.topk`` on one thread (4× faster than a numpy partition) where torch is
    imported already or ``sim`` holds at least :data:`TORCH_FROM` values, else
    ``np.argpartition``: importing torch for a question's graph would cost a run whose encoders
    are all remote 1.5 s of its GIL, in its first builds, to save a few milliseconds.
    One thread, because ``sim`` has just come from a
    multi-threaded BLAS product whose worker threads keep spinning on the other cores for tens
    of milliseconds after it returns: torch's own workers would compete with them for the cores
    (on 2 cores the same top-k took 15 ms on two threads right after the product, 11 ms on one,
    6 ms on two once the BLAS threads were idle).
    """
    torch = sys.modules.get("torch")
    if torch is None and sim.size >= TORCH_FROM:
        with contextlib.suppress(ImportError):
            import torch
    if torch is None:
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


def best_first(ids: IntArray, sims: FloatArray, k: int) -> tuple[IntArray, FloatArray]:
    """The first ``k`` of each row in (similarity descending, id ascending) order."""
    order = np.lexsort((ids, -sims), axis=1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(sims, order, axis=1)


def merge_rows(
    ids: IntArray,
    sims: FloatArray,
    more: list[tuple[IntArray, IntArray, FloatArray]],
    k: int,
) -> tuple[IntArray, FloatArray]:
    """Each row's best k of its (q, k) ``ids``/``sims`` and the (row, id, similarity)
    triples of ``more``, best first, equal similarities by lower id."""
    q = ids.shape[0]
    rows = np.concatenate([np.repeat(np.arange(q), k)] + [m[0] for m in more])
    all_ids = np.concatenate([ids.ravel()] + [m[1] for m in more])
    all_sims = np.concatenate([sims.ravel()] + [m[2] for m in more])
    order = np.lexsort((all_ids, -all_sims, rows))
    rows = rows[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, rows)  # every row has k entries
    keep = rank < k
    out_ids = np.empty((q, k), dtype=np.int64)
    out_sims = np.empty((q, k), dtype=np.float32)
    out_ids[rows[keep], rank[keep]] = all_ids[order][keep]
    out_sims[rows[keep], rank[keep]] = all_sims[order][keep]
    return out_ids, out_sims


def finish(ids: IntArray, sims: FloatArray) -> tuple[IntArray, FloatArray]:
    """Slots with no vector (similarity -inf) get id -1."""
    return np.where(np.isneginf(sims), np.int64(-1), ids), sims


def exclude_in_tile(sim: FloatArray, exclude: IntArray | None, start: int) -> None:
    """Sets ``sim[i, exclude[i] - start]`` to -inf where that column is in the tile."""
    if exclude is None:
        return
    hit = np.nonzero((exclude >= start) & (exclude < start + sim.shape[1]))[0]
    sim[hit, exclude[hit] - start] = -np.inf


def exact_top_k(
    queries: FloatArray,
    vectors: np.ndarray,
    k: int,
    exclude: IntArray | None = None,
    *,
    columns: int = 8192,
    elements: int = 1 << 24,
) -> tuple[IntArray, FloatArray]:
    """Each query's ``k`` largest inner products with ``vectors``, as (ids, similarities).

    Tiles of at most ``columns`` vectors (converted to float32 one at a time) × as many
    queries as keep a tile within ``elements`` similarities; each tile's top-k is merged into
    a running top-k. Best first, equal similarities by lower id; id -1 and similarity -inf
    where fewer than k exist; ``exclude[i]`` is never returned for query i.
    """
    q, n = queries.shape[0], vectors.shape[0]
    ids = np.full((q, k), _EMPTY, dtype=np.int64)
    sims = np.full((q, k), -np.inf, dtype=np.float32)
    if k == 0 or n == 0 or q == 0:
        return finish(ids, sims)
    tiles = spans(n, columns)
    rows = max(1, elements // max(stop - start for start, stop in tiles))
    for start, stop in tiles:
        tile = float32_rows(vectors, start, stop)
        for r in range(0, q, rows):
            part = exclude[r : r + rows] if exclude is not None else None
            found = _tile_top_k(queries[r : r + rows], tile, start, min(k, stop - start), part)
            merged = np.concatenate([ids[r : r + rows], found[0]], axis=1)
            merged_sims = np.concatenate([sims[r : r + rows], found[1]], axis=1)
            ids[r : r + rows], sims[r : r + rows] = best_first(merged, merged_sims, k)
    return finish(ids, sims)


def _tile_top_k(
    queries: FloatArray, tile: FloatArray, start: int, k: int, exclude: IntArray | None
) -> tuple[IntArray, FloatArray]:
    sim = queries @ tile.T
    exclude_in_tile(sim, exclude, start)
    chosen = top_k_lowest_index(sim, k)
    return chosen + start, np.take_along_axis(sim, chosen, axis=1)


def self_join_by_blocks(
    index: Any, vectors: np.ndarray, k: int, rows: int
) -> tuple[IntArray, FloatArray]:
    """``index.search`` of every row of ``vectors`` (its own row excluded), ``rows`` at a time:
    the self-join of an index that searches query by query."""
    n = vectors.shape[0]
    found = [
        index.search(float32_rows(vectors, start, stop), k, np.arange(start, stop))
        for start, stop in ((a, min(n, a + rows)) for a in range(0, n, max(1, rows)))
    ]
    if not found:
        return np.zeros((0, k), np.int64), np.zeros((0, k), np.float32)
    return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b))


def check_shape(path: Path, saved: tuple[object, object], vectors: np.ndarray) -> None:
    """Raise unless an index saved for ``saved`` = (n, d) vectors matches ``vectors``."""
    if saved != tuple(vectors.shape):
        raise ValueError(
            f"{path} indexes {saved[0]}×{saved[1]} vectors, but the embeddings are "
            f"{vectors.shape[0]}×{vectors.shape[1]}"
        )
