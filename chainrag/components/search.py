"""Vector search over (n, d) L2-normalised embeddings: exact tiles or a FAISS index.

One stage serves the SS edges of the sentence graph (ChainRAG §3.1: each sentence's m most
similar others) and seed retrieval over a corpus index (§3.2). A component is the search's
parameters; called on the vectors it builds a :class:`~chainrag.protocols.VectorIndex`.

``exact`` multiplies tiles of queries × vectors and merges each tile's top-k into a running
top-k, so memory stays bounded (``tile_elements`` similarities) at any n, and a float16 or
memory-mapped matrix is converted one tile at a time. ``faiss_hnsw`` and ``faiss_ivf`` are
approximate; FAISS is imported when one of them is used, never at import.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from chainrag.core.types import FloatArray
from chainrag.recipes.registry import VECTOR_SEARCH

IntArray = NDArray[np.int64]

FORMAT = "chainrag.vector_index"
"""Format name written in the file an exact index saves."""

_EMPTY = np.iinfo(np.int64).max
"""Id of an empty slot while merging: it sorts after every real id of equal similarity."""

SMALL_BATCH = 64
"""FAISS searches fewer queries than this on one thread (see :func:`faiss_threads`)."""

ADD_BATCH = 65536
"""Vectors converted to float32 and added to a FAISS index at a time."""


# --------------------------------------------------------------------------- top-k maths


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


def top_k(sim: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
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


# --------------------------------------------------------------------------- exact


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b))


@attrs.frozen
class ExactIndex:
    """The vectors themselves (no copy), searched by exact tiled inner products."""

    vectors: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_same_array), repr=False)
    columns: int = 8192
    elements: int = 1 << 24

    def search(
        self, queries: FloatArray, k: int, exclude: IntArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        q = np.asarray(queries, dtype=np.float32)
        return exact_top_k(
            q, self.vectors, k, exclude, columns=self.columns, elements=self.elements
        )

    def self_join(self, k: int, rows: int) -> tuple[IntArray, FloatArray]:
        return self_join_by_blocks(self, self.vectors, k, rows)

    def save(self, path: Path) -> None:
        n, d = self.vectors.shape
        Path(path).write_text(json.dumps({"format": FORMAT, "kind": "exact", "n": n, "d": d}))


@VECTOR_SEARCH.register("exact")
@attrs.frozen
class ExactSearch:
    """Exact inner-product top-k by tiles of queries × vectors, memory bounded at any n.

    SS edges (§3.1) and seeds (§3.2) as the paper computes them. A tile holds at most
    ``tile_columns`` vectors and ``tile_elements`` similarities (64 MiB by default).
    Recipe: ``{kind: exact}``.
    """

    tile_columns: int = attrs.field(default=8192, validator=attrs.validators.ge(1))
    tile_elements: int = attrs.field(default=1 << 24, validator=attrs.validators.ge(1))

    def __call__(self, vectors: FloatArray) -> ExactIndex:
        return ExactIndex(vectors, self.tile_columns, self.tile_elements)

    def load(self, path: Path, vectors: FloatArray) -> ExactIndex:
        try:
            header = json.loads(Path(path).read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not an exact vector index file: {exc}") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{path} is not an exact vector index file")
        check_shape(path, (header.get("n"), header.get("d")), vectors)
        return self(vectors)


def check_shape(path: Path, saved: tuple[object, object], vectors: np.ndarray) -> None:
    """Raise unless an index saved for ``saved`` = (n, d) vectors matches ``vectors``."""
    if saved != tuple(vectors.shape):
        raise ValueError(
            f"{path} indexes {saved[0]}×{saved[1]} vectors, but the embeddings are "
            f"{vectors.shape[0]}×{vectors.shape[1]}"
        )


# --------------------------------------------------------------------------- FAISS


def load_faiss() -> Any:
    """The ``faiss`` module (faiss-cpu), imported now; a clear error when it is missing."""
    try:
        return importlib.import_module("faiss")
    except ImportError as exc:
        raise ImportError(
            "faiss_hnsw and faiss_ivf need faiss-cpu (pinned in requirements/lock.txt): "
            f"pip install faiss-cpu ({exc})"
        ) from exc


def cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def faiss_threads(faiss: Any, batch: int) -> Iterator[None]:
    """FAISS's OpenMP threads for ``batch`` queries or vectors, restored afterwards.

    One per core for a large batch (FAISS parallelises over queries and added vectors), one
    below :data:`SMALL_BATCH`: a single query gains nothing from threads, and OpenMP workers
    that keep spinning after a call would compete with the BLAS and torch threads of the
    encoders and the exact top-k for the same cores (see :func:`top_k`).
    """
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(cores() if batch >= SMALL_BATCH else 1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def add_in_batches(faiss: Any, index: Any, vectors: np.ndarray) -> None:
    """Adds ``vectors`` to a FAISS index, :data:`ADD_BATCH` float32 rows at a time."""
    with faiss_threads(faiss, vectors.shape[0]):
        for start in range(0, vectors.shape[0], ADD_BATCH):
            block = float32_rows(vectors, start, start + ADD_BATCH)
            index.add(np.ascontiguousarray(block))


def _same_faiss(a: Any, b: Any) -> bool:
    faiss = load_faiss()
    return bool(faiss.serialize_index(a).tobytes() == faiss.serialize_index(b).tobytes())


@attrs.frozen
class FaissIndex:
    """A built FAISS index and how wide its searches look (HNSW efSearch or IVF nprobe)."""

    index: Any = attrs.field(eq=attrs.cmp_using(eq=_same_faiss), repr=False)
    kind: Literal["hnsw", "ivf"]
    breadth: int
    vectors: np.ndarray = attrs.field(eq=False, repr=False)
    """The vectors indexed (not copied): the queries of :meth:`self_join`."""

    def search(
        self, queries: FloatArray, k: int, exclude: IntArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        q = np.ascontiguousarray(queries, dtype=np.float32)
        want = k if exclude is None else k + 1  # one more, in case a query finds itself
        if k == 0 or q.shape[0] == 0:
            return finish(
                np.zeros((q.shape[0], k), np.int64), np.zeros((q.shape[0], k), np.float32)
            )
        faiss = load_faiss()
        with faiss_threads(faiss, q.shape[0]):
            sims, ids = self.index.search(q, want, params=self._parameters(faiss, want))
        drop = (ids < 0) if exclude is None else (ids < 0) | (ids == exclude[:, None])
        sims[drop], ids[drop] = -np.inf, _EMPTY
        return finish(*best_first(ids.astype(np.int64), sims, k))

    def self_join(self, k: int, rows: int) -> tuple[IntArray, FloatArray]:
        return self_join_by_blocks(self, self.vectors, k, rows)

    def _parameters(self, faiss: Any, k: int) -> Any:
        if self.kind == "hnsw":
            params = faiss.SearchParametersHNSW()
            params.efSearch = max(self.breadth, k)
        else:
            params = faiss.SearchParametersIVF()
            params.nprobe = min(self.breadth, self.index.nlist)
        return params

    def save(self, path: Path) -> None:
        load_faiss().write_index(self.index, str(path))


def read_faiss(path: Path, vectors: np.ndarray, kind: str, flags: int) -> Any:
    """A FAISS index file of ``kind`` over ``vectors``, memory-mapped where FAISS can.

    Raises:
        ValueError: The file is not such an index, or indexes other vectors.
    """
    faiss = load_faiss()
    try:
        index = faiss.read_index(str(path), flags)  # of its own class already
    except RuntimeError as exc:
        raise ValueError(f"{path} is not a FAISS index file: {exc}") from None
    want = faiss.IndexHNSWFlat if kind == "hnsw" else faiss.IndexIVFFlat
    if not isinstance(index, want) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise ValueError(f"{path} holds a {type(index).__name__}, not an inner-product {kind}")
    check_shape(path, (index.ntotal, index.d), vectors)
    return index


@VECTOR_SEARCH.register("faiss_hnsw", example={"m": 4, "ef_construction": 8, "ef_search": 8})
@attrs.frozen
class FaissHNSW:
    """Approximate top-k on a FAISS HNSW graph (IndexHNSWFlat, inner product).

    For SS edges (§3.1) and seeds (§3.2) past the sizes exact search can do. ``m`` links per
    node, ``ef_construction`` candidates while building, ``ef_search`` while searching (at
    least k). The index holds a float32 copy of the vectors; ``load`` maps it from the file.
    Built on several threads, the graph (and so the results) can differ from run to run.
    The defaults find 0.99 of the exact top-10 on the 21.7k real 2Wiki sentence vectors and
    0.97 on 100k (bench/ss_search.py).
    Recipe: ``{kind: faiss_hnsw, m: 32, ef_construction: 40, ef_search: 64}``.
    """

    m: int = attrs.field(default=32, validator=attrs.validators.ge(2))
    ef_construction: int = attrs.field(default=40, validator=attrs.validators.ge(1))
    ef_search: int = attrs.field(default=64, validator=attrs.validators.ge(1))

    def __call__(self, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        index = faiss.IndexHNSWFlat(vectors.shape[1], self.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        add_in_batches(faiss, index, vectors)
        return FaissIndex(index, "hnsw", self.ef_search, vectors)

    def load(self, path: Path, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
        index = read_faiss(path, vectors, "hnsw", flags)
        return FaissIndex(index, "hnsw", self.ef_search, vectors)


_NONE_OR_POSITIVE = attrs.validators.optional(attrs.validators.ge(1))
"""An IVF index's optional counts (``nlist``, ``train_size``): None (derived from n) or ≥ 1."""


def default_nlist(n: int, per_sqrt_n: float) -> int:
    """IVF lists for n vectors: ``per_sqrt_n``·√n, at least 1 and at most n."""
    return max(1, min(n, round(per_sqrt_n * math.sqrt(n))))


def ivf_lists(
    n: int, nlist: int | None, per_sqrt_n: float, train_size: int | None
) -> tuple[int, int]:
    """(lists, k-means sample size) of an IVF index over n vectors: ``nlist`` or
    :func:`default_nlist`, at least 1 and at most n; ``train_size`` or 40 per list, at least
    one per list."""
    lists = min(max(n, 1), nlist or default_nlist(n, per_sqrt_n))
    return lists, max(lists, train_size or 40 * lists)


def training_sample(vectors: np.ndarray, size: int, seed: int) -> FloatArray:
    """``size`` rows drawn without replacement by a seeded generator, in row order, float32."""
    n = vectors.shape[0]
    if n == 0:  # k-means needs a point: one unit vector stands in for an empty corpus
        return np.eye(1, vectors.shape[1], dtype=np.float32)
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(size, n), replace=False))
    return np.ascontiguousarray(vectors[rows], dtype=np.float32)


@VECTOR_SEARCH.register("faiss_ivf", example={"nlist": 2, "nprobe": 1})
@attrs.frozen
class FaissIVF:
    """Approximate top-k in FAISS inverted lists (IndexIVFFlat, inner product, k-means).

    For SS edges (§3.1) and seeds (§3.2) past the sizes exact search can do. ``nlist`` lists
    (default ``lists_per_sqrt_n``·√n), trained by spherical k-means on ``train_size`` vectors
    (default 40 per list) drawn with ``seed``; a search scans the ``nprobe`` nearest lists
    (``nprobe = nlist`` scans every vector: exact). ``load`` maps the lists from the file.
    The defaults (the fastest build reaching 0.95) find 0.955 of the exact top-10 on the
    21.7k real 2Wiki sentence vectors and 0.977 on 100k (bench/ss_search.py).
    Recipe: ``{kind: faiss_ivf, lists_per_sqrt_n: 1, nprobe: 24}``.
    """

    nlist: int | None = attrs.field(default=None, validator=_NONE_OR_POSITIVE)
    lists_per_sqrt_n: float = attrs.field(default=1.0, validator=attrs.validators.gt(0))
    nprobe: int = attrs.field(default=24, validator=attrs.validators.ge(1))
    train_size: int | None = attrs.field(default=None, validator=_NONE_OR_POSITIVE)
    seed: int = 0

    def __call__(self, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        n, d = vectors.shape
        nlist, size = ivf_lists(n, self.nlist, self.lists_per_sqrt_n, self.train_size)
        sample = training_sample(vectors, size, self.seed)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = self.seed
        index.cp.min_points_per_centroid = 1  # a small sample is our choice: no warning
        index.cp.max_points_per_centroid = sample.shape[0]  # FAISS must not subsample again
        with faiss_threads(faiss, n):
            index.train(sample)
        add_in_batches(faiss, index, vectors)
        return FaissIndex(index, "ivf", self.nprobe, vectors)

    def load(self, path: Path, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY
        return FaissIndex(read_faiss(path, vectors, "ivf", flags), "ivf", self.nprobe, vectors)


# --------------------------------------------------------------------------- IVF in blocks

IVF_FORMAT = "chainrag.blocked_ivf"
"""Format name written in the file a blocked IVF index saves."""

ASSIGN_ROWS = 16384
"""Vectors compared with every centroid at a time."""

LISTS_SUFFIX = ".lists.npy"
"""Added to a blocked IVF index file's name: the file beside it with the vectors in list order."""

CHECKED_ROWS = 16
"""Rows of a list-ordered vectors file compared with the vectors when an index is loaded."""


def nearest_lists(vectors: np.ndarray, centroids: FloatArray, p: int) -> IntArray:
    """The ``p`` centroids of largest inner product with each row, best first, (n, p)."""
    n = vectors.shape[0]
    out = np.zeros((n, p), dtype=np.int64)
    for start in range(0, n, ASSIGN_ROWS):
        block = float32_rows(vectors, start, start + ASSIGN_ROWS)
        out[start : start + block.shape[0]] = top_k(block @ centroids.T, p)[1]
    return out


def spherical_kmeans(sample: FloatArray, k: int, iterations: int, seed: int) -> FloatArray:
    """``k`` unit centroids of the unit rows of ``sample`` by spherical k-means (Lloyd's steps
    on cosine), started from ``k`` rows drawn with ``seed``; a list left empty keeps its
    centroid. Plain numpy: the same sample and seed give the same centroids."""
    rng = np.random.default_rng(seed)
    centroids = sample[np.sort(rng.choice(sample.shape[0], size=k, replace=False))].copy()
    for _ in range(iterations):
        assign = nearest_lists(sample, centroids, 1)[:, 0]
        order = np.argsort(assign, kind="stable")
        used, starts = np.unique(assign[order], return_index=True)
        sums = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        ok = norms[:, 0] > 0
        centroids[used[ok]] = sums[ok] / norms[ok]
    return centroids


def lists_file(path: Path) -> Path:
    """The file beside the blocked IVF index file ``path`` that holds its vectors in list
    order (``path``'s name plus :data:`LISTS_SUFFIX`)."""
    return path.with_name(path.name + LISTS_SUFFIX)


def list_order_blocks(vectors: np.ndarray, order: IntArray) -> Iterator[FloatArray]:
    """``vectors[order]`` as float32, :data:`ADD_BATCH` rows at a time."""
    for start in range(0, order.size, ADD_BATCH):
        yield np.asarray(vectors[order[start : start + ADD_BATCH]], dtype=np.float32)


def in_list_order(vectors: np.ndarray, order: IntArray) -> FloatArray:
    """``vectors[order]`` as one float32 array in memory, filled block by block."""
    out = np.empty((order.size, vectors.shape[1]), dtype=np.float32)
    start = 0
    for block in list_order_blocks(vectors, order):
        out[start : start + block.shape[0]] = block
        start += block.shape[0]
    return out


def write_in_list_order(path: Path, vectors: np.ndarray, order: IntArray) -> None:
    """``vectors[order]`` as a float32 ``.npy`` file at ``path``, written block by block (one
    block in memory, never a second copy of the vectors)."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (order.size, vectors.shape[1])}
    with path.open("wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        for block in list_order_blocks(vectors, order):
            f.write(block.astype("<f4", copy=False).tobytes())


def open_in_list_order(path: Path, vectors: np.ndarray, order: IntArray) -> FloatArray:
    """The memory-mapped ``.npy`` file ``path`` written by :func:`write_in_list_order`, once
    its shape, dtype and :data:`CHECKED_ROWS` evenly spaced rows match ``vectors[order]``."""
    try:
        mapped = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a file of vectors in list order: {exc}") from None
    spread = np.linspace(0, max(order.size - 1, 0), CHECKED_ROWS).astype(np.int64)
    rows = np.unique(spread)[: order.size]
    if (
        mapped.shape != (order.size, vectors.shape[1])
        or mapped.dtype != np.float32
        or not np.array_equal(mapped[rows], in_list_order(vectors, order[rows]))
    ):
        raise ValueError(
            f"{path} does not hold these vectors in the index's list order: remove it "
            "(the index then gathers each list from the vectors) or save the index again"
        )
    return np.asarray(mapped)  # a plain view: slicing it skips np.memmap's __getitem__


def reverse_neighbours(ids: IntArray, sims: FloatArray) -> IntArray:
    """(n, k): for each row j, up to k rows i that hold j among their ``ids``, most similar
    first (then lower i), -1 where fewer."""
    n, k = ids.shape
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    dst, s = ids.ravel(), sims.ravel()
    ok = dst >= 0
    src, dst, s = src[ok], dst[ok], s[ok]
    order = np.lexsort((src, -s, dst))
    dst, src = dst[order], src[order]
    rank = np.arange(dst.size) - np.searchsorted(dst, dst)
    keep = rank < k
    out = np.full((n, k), -1, dtype=np.int64)
    out[dst[keep], rank[keep]] = src[keep]
    return out


REFINE_ROWS = 1024
"""Rows whose neighbours' neighbours are compared at a time (k² gathered vectors each)."""


def neighbour_step(
    vectors: FloatArray, at: IntArray, ids: IntArray, sims: FloatArray
) -> tuple[IntArray, FloatArray]:
    """One step of neighbour descent: row i's best k of its found neighbours (``ids[i]``,
    ``sims[i]``; -1 where none), their own neighbours, and the (up to k most similar) rows that
    found i, best first, equal similarities by lower id. Vector i is ``vectors[at[i]]``. A row
    never gains itself and loses a neighbour only to a more similar vector, so the recall of
    the exact top-k can only rise."""
    n, k = ids.shape
    out_ids, out_sims = ids.copy(), sims.copy()
    found_by = reverse_neighbours(ids, sims)
    for start in range(0, n, REFINE_ROWS):
        rows = np.arange(start, min(n, start + REFINE_ROWS))
        own = ids[rows]
        theirs = np.where(own[:, :, None] >= 0, ids[np.maximum(own, 0)], -1)
        cand = np.sort(np.concatenate([theirs.reshape(rows.size, k * k), found_by[rows]], 1), 1)
        bad = (cand < 0) | (cand == rows[:, None]) | (own[:, :, None] == cand[:, None, :]).any(1)
        bad[:, 1:] |= cand[:, 1:] == cand[:, :-1]  # each candidate once
        mine, theirs = vectors[at[rows]], vectors[at[np.maximum(cand, 0)]]
        cand_sims = np.einsum("rd,rcd->rc", mine, theirs)
        cand_sims[bad] = -np.inf
        merged = best_first(
            np.concatenate([own, cand], axis=1),
            np.concatenate([sims[rows], cand_sims.astype(np.float32)], axis=1),
            k,
        )
        out_ids[rows], out_sims[rows] = finish(*merged)
    return out_ids, out_sims


@attrs.frozen
class BlockedIVFIndex:
    """Inverted lists searched list by list with one matrix product per list.

    ``order`` holds the vector ids list by list (ascending within a list) and
    ``offsets[c]:offsets[c + 1]`` is list c's part of it. A search gathers, for every list
    some query probes, the queries that probe it and multiplies them with the list's vectors
    at once: the work of FAISS's IndexIVFFlat, done as BLAS products over many queries, so a
    list's vectors are read once per block of queries instead of once per query.

    ``in_lists`` is ``vectors[order]`` as float32, as IndexIVFFlat stores its lists: list c's
    vectors are the slice ``in_lists[offsets[c]:offsets[c + 1]]``, multiplied in place. A
    loaded index maps it from the file :meth:`save` wrote beside the index file; an index built
    in memory (or loaded from a file saved without it) has none and gathers each probed list's
    rows from ``vectors`` instead (no second copy in memory; the same products, so the same
    results bit for bit).
    """

    vectors: np.ndarray = attrs.field(eq=False, repr=False)
    centroids: FloatArray = attrs.field(eq=attrs.cmp_using(eq=_same_array), repr=False)
    order: IntArray = attrs.field(eq=attrs.cmp_using(eq=_same_array), repr=False)
    offsets: IntArray = attrs.field(eq=False, repr=False)
    nprobe: int
    query_block: int
    refine: int = 0
    """Steps of :func:`neighbour_step` after a self-join (none when every list is probed)."""
    in_lists: FloatArray | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def nlist(self) -> int:
        return int(self.centroids.shape[0])

    def search(
        self, queries: FloatArray, k: int, exclude: IntArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if k == 0 or q.shape[0] == 0 or self.vectors.shape[0] == 0:
            shape = (q.shape[0], k)
            return finish(np.full(shape, _EMPTY, np.int64), np.full(shape, -np.inf, np.float32))
        probes = nearest_lists(q, self.centroids, min(self.nprobe, self.nlist))

        def gathered(c: int) -> FloatArray:
            members = self.order[self.offsets[c] : self.offsets[c + 1]]
            return np.asarray(self.vectors[members], dtype=np.float32)

        list_vectors = gathered if self.in_lists is None else self._slices(self.in_lists)
        return self._scan(q, probes, k, exclude, list_vectors)

    def self_join(self, k: int, rows: int) -> tuple[IntArray, FloatArray]:
        """Every vector's k nearest others, in blocks of at least :attr:`query_block` rows,
        over the vectors in list order (each list's vectors contiguous): :attr:`in_lists` where
        the index has it, else a float32 copy made for the join."""
        n = self.vectors.shape[0]
        if k == 0:
            return np.zeros((n, 0), np.int64), np.zeros((n, 0), np.float32)
        in_lists = (
            in_list_order(self.vectors, self.order) if self.in_lists is None else self.in_lists
        )
        step = max(rows, self.query_block)
        ids_out = np.zeros((n, k), np.int64)
        sims_out = np.zeros((n, k), np.float32)
        for start in range(0, n, step):
            q = float32_rows(self.vectors, start, start + step)
            stop = start + q.shape[0]
            probes = nearest_lists(q, self.centroids, min(self.nprobe, self.nlist))
            found = self._scan(q, probes, k, np.arange(start, stop), self._slices(in_lists))
            ids_out[start:stop], sims_out[start:stop] = found
        if self.nprobe < self.nlist:  # probing every list is exact already
            at = np.empty(n, dtype=np.int64)
            at[self.order] = np.arange(n)
            for _ in range(self.refine):
                ids_out, sims_out = neighbour_step(in_lists, at, ids_out, sims_out)
        return ids_out, sims_out

    def _slices(self, in_lists: FloatArray) -> Callable[[int], FloatArray]:
        """List c's vectors as the slice of ``in_lists`` (the vectors in list order) it fills."""
        return lambda c: in_lists[self.offsets[c] : self.offsets[c + 1]]

    def _scan(
        self,
        q: FloatArray,
        probes: IntArray,
        k: int,
        exclude: IntArray | None,
        list_vectors: Callable[[int], FloatArray],
    ) -> tuple[IntArray, FloatArray]:
        """Each query's top-k among the lists it probes (best first, equal similarities by
        lower id), by list-major products in two passes.

        First each query's nearest list: its top-k there, whose k-th similarity is the bar.
        Then its other lists: only what reaches the bar is kept (a comparison instead of a
        top-k per product, the larger part of the work). Anything below the bar has k better
        vectors already, so the result is the top-k of all probed vectors: probing every list
        gives the exact top-k.
        """
        first_ids = np.full((q.shape[0], k), _EMPTY, dtype=np.int64)
        first_sims = np.full((q.shape[0], k), -np.inf, dtype=np.float32)
        for c, rows in self._groups(probes[:, 0]):
            members, sim = self._products(q, rows, c, exclude, list_vectors)
            kc = min(k, members.size)
            chosen = top_k_lowest_index(sim, kc)
            first_ids[rows, :kc] = members[chosen]
            first_sims[rows, :kc] = np.take_along_axis(sim, chosen, axis=1)
        bar = np.maximum(first_sims[:, k - 1], np.finfo(np.float32).min)  # never an excluded
        found: list[tuple[IntArray, IntArray, FloatArray]] = []
        rest = probes[:, 1:]
        for c, at in self._groups(rest.ravel()):
            rows = at // rest.shape[1]
            members, sim = self._products(q, rows, c, exclude, list_vectors)
            r, col = np.nonzero(sim >= bar[rows][:, None])
            found.append((rows[r], members[col], sim[r, col]))
        return finish(*merge_rows(first_ids, first_sims, found, k))

    def _groups(self, lists: IntArray) -> Iterator[tuple[int, IntArray]]:
        """(list, positions in ``lists`` naming it) for every list named, in list order."""
        pairs = np.argsort(lists, kind="stable")
        bounds = np.searchsorted(lists[pairs], np.arange(self.nlist + 1))
        for c in np.nonzero(np.diff(bounds))[0].tolist():
            yield c, pairs[bounds[c] : bounds[c + 1]]

    def _products(
        self,
        q: FloatArray,
        rows: IntArray,
        c: int,
        exclude: IntArray | None,
        list_vectors: Callable[[int], FloatArray],
    ) -> tuple[IntArray, FloatArray]:
        """List c's ids (ascending) and the similarities of queries ``rows`` with them, a
        query's excluded id at -inf."""
        members = self.order[self.offsets[c] : self.offsets[c + 1]]
        sim = q[rows] @ list_vectors(c).T
        if exclude is not None and members.size:  # a query's own id is in at most one column
            at_id = np.minimum(np.searchsorted(members, exclude[rows]), members.size - 1)
            hit = np.nonzero(members[at_id] == exclude[rows])[0]
            sim[hit, at_id[hit]] = -np.inf
        return members, sim

    def save(self, path: Path) -> None:
        """Write the lists to ``path`` (an npz) and, first, the vectors in list order to
        :func:`lists_file` of it (float32 ``.npy``, block by block): whoever moves the index
        file moves that one with it."""
        n, d = self.vectors.shape
        write_in_list_order(lists_file(Path(path)), self.vectors, self.order)
        with Path(path).open("wb") as f:
            np.savez(
                f,
                header=np.array(json.dumps({"format": IVF_FORMAT, "n": n, "d": d})),
                centroids=self.centroids,
                order=self.order,
                offsets=self.offsets,
            )


@VECTOR_SEARCH.register("blocked_ivf", example={"nlist": 2, "nprobe": 1})
@attrs.frozen
class BlockedIVF:
    """Approximate top-k in inverted lists, each list searched by one matrix product.

    For the SS layer of a large corpus (§3.1): every sentence is a query, so the lists are
    scanned list by list for :attr:`query_block` queries at a time (BLAS products, each
    list's vectors read once per block) — at 1M sentences FAISS's IndexIVFFlat, scanning the
    same lists query by query, is bound by reading them again for every query. ``nlist``
    lists (default ``lists_per_sqrt_n``·√n) by spherical k-means (numpy, ``iterations``
    steps) on ``train_size`` vectors (default 40 per list) drawn with ``seed``; a query scans
    its ``nprobe`` nearest lists, exactly (``nprobe = nlist``: exact search). The self-join
    holds a float32 copy of the vectors in list order, then takes ``refine`` steps of
    :func:`neighbour_step` (neighbours' neighbours and reverse neighbours, compared exactly).
    ``save`` writes the lists and, beside them, the vectors in list order (one more float32
    copy of the embeddings on disk); ``load`` reads the lists and maps that copy, so a search
    reads each probed list as one slice, as IndexIVFFlat does (a file saved without the copy
    still loads, and its searches gather each list's rows). The defaults (4·√n lists,
    nprobe 32, one refinement step) recall 0.966 of the exact top-10 on the real 23k 2Wiki
    sentence vectors and 0.964 at 1M (README, Benchmarks). Recipe: ``{kind: blocked_ivf}``.
    """

    nlist: int | None = attrs.field(default=None, validator=_NONE_OR_POSITIVE)
    lists_per_sqrt_n: float = attrs.field(default=4.0, validator=attrs.validators.gt(0))
    nprobe: int = attrs.field(default=32, validator=attrs.validators.ge(1))
    train_size: int | None = attrs.field(default=None, validator=_NONE_OR_POSITIVE)
    iterations: int = attrs.field(default=20, validator=attrs.validators.ge(0))
    seed: int = 0
    query_block: int = attrs.field(default=65536, validator=attrs.validators.ge(1))
    refine: int = attrs.field(default=1, validator=attrs.validators.ge(0))

    def __call__(self, vectors: FloatArray) -> BlockedIVFIndex:
        n = vectors.shape[0]
        nlist, size = ivf_lists(n, self.nlist, self.lists_per_sqrt_n, self.train_size)
        sample = training_sample(vectors, size, self.seed)
        centroids = spherical_kmeans(sample, nlist, self.iterations, self.seed)
        lists = nearest_lists(vectors, centroids, 1)[:, 0]
        order = np.argsort(lists, kind="stable")
        offsets = np.searchsorted(lists[order], np.arange(nlist + 1)).astype(np.int64)
        return BlockedIVFIndex(
            vectors, centroids, order, offsets, self.nprobe, self.query_block, self.refine
        )

    def load(self, path: Path, vectors: FloatArray) -> BlockedIVFIndex:
        try:
            with np.load(Path(path), allow_pickle=False) as saved:
                header = json.loads(str(saved["header"]))
                parts = {key: saved[key] for key in ("centroids", "order", "offsets")}
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{path} is not a blocked IVF index file: {exc}") from None
        if not isinstance(header, dict) or header.get("format") != IVF_FORMAT:
            raise ValueError(f"{path} is not a blocked IVF index file")
        check_shape(path, (header.get("n"), header.get("d")), vectors)
        beside = lists_file(Path(path))
        in_lists = open_in_list_order(beside, vectors, parts["order"]) if beside.is_file() else None
        return BlockedIVFIndex(
            vectors,
            parts["centroids"],
            parts["order"],
            parts["offsets"],
            self.nprobe,
            self.query_block,
            self.refine,
            in_lists,
        )
