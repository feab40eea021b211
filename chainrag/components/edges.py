"""Edge builders of the sentence graph (ChainRAG §3.1). Each returns its own CSR matrix.

So far: structural adjacency (SA). Entity co-occurrence (EC) and semantic similarity (SS)
arrive with the sentence-graph index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
import numpy as np
from scipy import sparse

from chainrag.registry import EDGE_BUILDERS
from chainrag.types import GraphInputs

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
