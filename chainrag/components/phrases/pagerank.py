"""Personalized PageRank over the phrase graph (HippoRAG §3.2), as the authors' code runs it:
igraph's ``personalized_pagerank(damping=..., directed=False, weights='weight',
implementation='prpack')``. With probability ``damping`` the walk follows an edge (chosen by
weight), else it restarts at the reset distribution (the reset weights normalised); a phrase
with no edge restarts there too (PRPACK is given the reset vector for sinks as well). Solved
here by power iteration with scipy sparse products, to an L1 change below ``tol``.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from chainrag.core.phrase_graph import PhraseGraph
from chainrag.recipes.registry import PHRASE_RANKERS


def personalized_pagerank(
    adjacency: sparse.csr_matrix,
    reset: NDArray[np.float64],
    damping: float,
    tol: float = 1e-12,
    max_iter: int = 10_000,
) -> NDArray[np.float64]:
    """The stationary distribution of the walk on the symmetric weighted ``adjacency`` that
    follows an edge with probability ``damping`` and restarts at ``reset`` / sum otherwise
    (and from a phrase without edges); sums to 1."""
    restart = np.asarray(reset, dtype=np.float64)
    total = restart.sum()
    if restart.size == 0 or total <= 0:
        raise ValueError("personalized PageRank needs reset weights that are not all zero")
    restart = restart / total
    degree = np.asarray(adjacency.sum(axis=1), dtype=np.float64).reshape(-1)
    sink = degree == 0
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=~sink)
    walk = sparse.csr_matrix(adjacency.T, dtype=np.float64)
    p = restart.copy()
    for _ in range(max_iter):
        stuck = p[sink].sum()
        new = damping * (walk @ (p * inverse)) + (damping * stuck + 1.0 - damping) * restart
        change = np.abs(new - p).sum()
        p = new
        if change < tol:
            break
    out: NDArray[np.float64] = p / p.sum()
    return out


@PHRASE_RANKERS.register("personalized_pagerank")
@attrs.frozen
class PersonalizedPageRank:
    """Personalized PageRank over the phrase graph from the query's linked phrases (§3.2).

    Recipe: ``{kind: personalized_pagerank, damping: 0.5}``.
    """

    damping: float = attrs.field(default=0.5)
    """The probability of following an edge, else the walk restarts (the authors' 0.5)."""

    def __attrs_post_init__(self) -> None:
        if not 0.0 <= self.damping < 1.0:
            raise ValueError(f"'damping' must be in [0, 1), got {self.damping!r}")

    def __call__(self, graph: PhraseGraph, reset: NDArray[np.float64]) -> NDArray[np.float64]:
        return personalized_pagerank(graph.adjacency, reset, self.damping)
