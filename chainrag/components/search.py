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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from chainrag.registry import VECTOR_SEARCH
from chainrag.types import FloatArray

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
        return FaissIndex(index, "hnsw", self.ef_search)

    def load(self, path: Path, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
        return FaissIndex(read_faiss(path, vectors, "hnsw", flags), "hnsw", self.ef_search)


def default_nlist(n: int, per_sqrt_n: float) -> int:
    """IVF lists for n vectors: ``per_sqrt_n``·√n, at least 1 and at most n."""
    return max(1, min(n, round(per_sqrt_n * math.sqrt(n))))


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

    nlist: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    lists_per_sqrt_n: float = attrs.field(default=1.0, validator=attrs.validators.gt(0))
    nprobe: int = attrs.field(default=24, validator=attrs.validators.ge(1))
    train_size: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    seed: int = 0

    def __call__(self, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        n, d = vectors.shape
        nlist = min(max(n, 1), self.nlist or default_nlist(n, self.lists_per_sqrt_n))
        sample = training_sample(vectors, max(nlist, self.train_size or 40 * nlist), self.seed)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = self.seed
        index.cp.min_points_per_centroid = 1  # a small sample is our choice: no warning
        index.cp.max_points_per_centroid = sample.shape[0]  # FAISS must not subsample again
        with faiss_threads(faiss, n):
            index.train(sample)
        add_in_batches(faiss, index, vectors)
        return FaissIndex(index, "ivf", self.nprobe)

    def load(self, path: Path, vectors: FloatArray) -> FaissIndex:
        faiss = load_faiss()
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY
        return FaissIndex(read_faiss(path, vectors, "ivf", flags), "ivf", self.nprobe)
