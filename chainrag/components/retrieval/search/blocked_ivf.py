"""``blocked_ivf``: inverted lists by numpy spherical k-means, searched list by list with one
BLAS product per list for a block of queries, then a step of neighbour descent."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import numpy as np

from chainrag.components.retrieval.search.faiss_indexes import (
    _NONE_OR_POSITIVE,
    ADD_BATCH,
    ivf_lists,
    training_sample,
)
from chainrag.components.retrieval.search.topk import (
    _EMPTY,
    IntArray,
    _same_array,
    best_first,
    check_shape,
    finish,
    float32_rows,
    merge_rows,
    top_k,
    top_k_lowest_index,
)
from chainrag.core.types import FloatArray
from chainrag.recipes.registry import VECTOR_SEARCH

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
