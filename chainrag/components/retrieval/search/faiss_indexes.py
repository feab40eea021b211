"""``faiss_hnsw`` and ``faiss_ivf``: FAISS indexes over the vectors, imported when one is used
(never at import), with its OpenMP threads set per batch."""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np

from chainrag.components.retrieval.search.topk import (
    _EMPTY,
    IntArray,
    best_first,
    check_shape,
    finish,
    float32_rows,
    self_join_by_blocks,
)
from chainrag.core.device import cores
from chainrag.core.types import FloatArray
from chainrag.recipes.registry import VECTOR_SEARCH

SMALL_BATCH = 64
"""FAISS searches fewer queries than this on one thread (see :func:`faiss_threads`)."""

ADD_BATCH = 65536
"""Vectors converted to float32 and added to a FAISS index at a time."""


def load_faiss() -> Any:
    """The ``faiss`` module (faiss-cpu), imported now; a clear error when it is missing."""
    try:
        return importlib.import_module("faiss")
    except ImportError as exc:
        raise ImportError(
            "faiss_hnsw and faiss_ivf need faiss-cpu (pinned in requirements/lock.txt): "
            f"pip install faiss-cpu ({exc})"
        ) from exc


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
