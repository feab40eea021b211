"""The SS layer's k-NN graph by NN-descent (pynndescent), for a corpus of up to a million
sentences.

The SS layer (ChainRAG §3.1) needs every sentence's m most similar others: a k-NN graph of the
corpus, not an index for new queries. ``nndescent`` builds that graph with pynndescent's
NN-descent (Dong et al. 2011; metric ``dot`` on the L2-normalised vectors), keeping
``n_neighbors`` candidates a row, and the self-join reads each row's best m of them, compared
exactly. Measured side by side with chainrag's hand-written ``blocked_ivf`` (bench/ss_search.py
``--graphs``, docs/benchmarks.md): at 1M sentences 171 s against 286 s at recall@10 0.984
against 0.985 of the exact top-10; at 300k 65 s against 74 s (0.987 against 0.980); at 100k
blocked_ivf is faster (24 s against 37 s, pynndescent's numba compilation included) and
recalls less (0.975 against 0.987).

Its :meth:`~NNDescentIndex.search` is exact (tiles over the vectors, as ``exact``): NN-descent
makes no index for new queries, so seed retrieval takes ``blocked_ivf`` or a FAISS index
(recipes/variants/corpus_nndescent.yaml). pynndescent (and its numba) are imported when the
graph is built, never at import.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np

from chainrag.components.retrieval.search.topk import (
    FORMAT,
    IntArray,
    best_first,
    check_shape,
    exact_top_k,
    finish,
    float32_rows,
)
from chainrag.core.types import FloatArray
from chainrag.recipes.registry import VECTOR_SEARCH

JOIN_ROWS = 8192
"""Rows whose candidates are compared at a time in the self-join (rows × K vectors gathered)."""


def _same_graph(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(a.shape == b.shape and np.array_equal(a, b))


@attrs.frozen
class NNDescentIndex:
    """The vectors (not copied) and their NN-descent graph: ``graph[i]`` holds row i's
    candidate neighbours (-1 where none; i itself may be among them)."""

    vectors: np.ndarray = attrs.field(eq=False, repr=False)
    graph: IntArray = attrs.field(eq=attrs.cmp_using(eq=_same_graph), repr=False)

    def search(
        self, queries: FloatArray, k: int, exclude: IntArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        """Exact top-k over the vectors (NN-descent builds no index for new queries)."""
        return exact_top_k(np.asarray(queries, dtype=np.float32), self.vectors, k, exclude)

    def self_join(self, k: int, rows: int) -> tuple[IntArray, FloatArray]:
        """Each row's best k candidates other than itself, by the inner product, best first
        (equal similarities by lower id), -1 and -inf where it has fewer; ``rows`` is not
        used (the graph is built whole)."""
        n = self.vectors.shape[0]
        ids_out = np.full((n, k), -1, np.int64)
        sims_out = np.full((n, k), -np.inf, np.float32)
        if k == 0 or n == 0:
            return ids_out, sims_out
        for start in range(0, n, JOIN_ROWS):
            stop = min(n, start + JOIN_ROWS)
            cand = self.graph[start:stop]
            mine = float32_rows(self.vectors, start, stop)
            theirs = np.asarray(self.vectors[np.maximum(cand, 0)], dtype=np.float32)
            sims = np.einsum("rd,rcd->rc", mine, theirs).astype(np.float32)
            own = np.arange(start, stop)[:, None]
            sims[(cand < 0) | (cand == own)] = -np.inf
            ids, best = best_first(cand.astype(np.int64), sims, min(k, cand.shape[1]))
            ids_out[start:stop, : ids.shape[1]], sims_out[start:stop, : ids.shape[1]] = finish(
                ids, best
            )
        return ids_out, sims_out

    def save(self, path: Path) -> None:
        """The graph as a .npy file at ``path`` (after a one-line JSON header)."""
        header = {"format": FORMAT, "kind": "nndescent", "n": int(self.vectors.shape[0]),
                  "d": int(self.vectors.shape[1])}  # fmt: skip
        with Path(path).open("wb") as fh:
            fh.write((json.dumps(header) + "\n").encode())
            np.save(fh, self.graph, allow_pickle=False)


@VECTOR_SEARCH.register("nndescent", example={"n_neighbors": 4})
@attrs.frozen
class NNDescentSearch:
    """The SS layer's k-NN graph by pynndescent's NN-descent (module docstring):
    ``n_neighbors`` candidates a row (32, as measured), ``seed`` for its random
    initialisation, numba's threads (all cores unless ``NUMBA_NUM_THREADS`` says otherwise).
    Corpora of up to ``n_neighbors`` + 1 vectors are joined exactly. Recipe:
    ``ss: {kind: similarity_topk, search: {kind: nndescent}}``.
    """

    n_neighbors: int = attrs.field(default=32, validator=attrs.validators.ge(2))
    seed: int = 0

    def __call__(self, vectors: FloatArray) -> NNDescentIndex:
        n = vectors.shape[0]
        if n <= self.n_neighbors + 1:  # every other row is a neighbour: the exact graph
            graph = np.tile(np.arange(n, dtype=np.int64), (n, 1))
            return NNDescentIndex(vectors, graph)
        from pynndescent import NNDescent

        dense = np.ascontiguousarray(vectors, dtype=np.float32)
        found, _ = NNDescent(
            dense, metric="dot", n_neighbors=self.n_neighbors, random_state=self.seed
        ).neighbor_graph
        return NNDescentIndex(vectors, np.asarray(found, dtype=np.int64))

    def load(self, path: Path, vectors: FloatArray) -> NNDescentIndex:
        with Path(path).open("rb") as fh:
            try:
                header = json.loads(fh.readline())
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ValueError(f"{path} is not an nndescent index file: {exc}") from None
            if not isinstance(header, dict) or header.get("kind") != "nndescent":
                raise ValueError(f"{path} is not an nndescent index file")
            check_shape(path, (header.get("n"), header.get("d")), vectors)
            graph = np.load(fh, allow_pickle=False)
        return NNDescentIndex(vectors, graph)
