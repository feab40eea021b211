"""Vector search over (n, d) L2-normalised embeddings: exact tiles, a FAISS index, blocked IVF
or an NN-descent k-NN graph.

One stage serves the SS edges of the sentence graph (ChainRAG §3.1: each sentence's m most
similar others) and seed retrieval over a corpus index (§3.2). A component is the search's
parameters; called on the vectors it builds a :class:`~chainrag.protocols.VectorIndex`.

``exact`` multiplies tiles of queries × vectors and merges each tile's top-k into a running
top-k, so memory stays bounded (``tile_elements`` similarities) at any n, and a float16 or
memory-mapped matrix is converted one tile at a time. ``faiss_hnsw`` and ``faiss_ivf`` are
approximate; FAISS is imported when one of them is used, never at import.

One module a concern: :mod:`~chainrag.components.retrieval.search.topk` (the
top-k maths every search
shares), :mod:`~chainrag.components.retrieval.search.exact`,
:mod:`~chainrag.components.retrieval.search.faiss_indexes`,
:mod:`~chainrag.components.retrieval.search.blocked_ivf` and
:mod:`~chainrag.components.retrieval.search.nndescent`
(the SS layer's graph by pynndescent). Importing the package registers them all.
"""

from chainrag.components.retrieval.search.blocked_ivf import (
    BlockedIVF,
    BlockedIVFIndex,
    in_list_order,
    lists_file,
    neighbour_step,
    reverse_neighbours,
)
from chainrag.components.retrieval.search.exact import ExactIndex, ExactSearch
from chainrag.components.retrieval.search.faiss_indexes import (
    FaissHNSW,
    FaissIndex,
    FaissIVF,
    load_faiss,
)
from chainrag.components.retrieval.search.nndescent import NNDescentIndex, NNDescentSearch
from chainrag.components.retrieval.search.topk import (
    FORMAT,
    IntArray,
    best_first,
    check_shape,
    exact_top_k,
    finish,
    float32_rows,
    merge_rows,
    self_join_by_blocks,
    spans,
    top_k,
    top_k_lowest_index,
)
from chainrag.core.device import cores

__all__ = [
    "FORMAT",
    "BlockedIVF",
    "BlockedIVFIndex",
    "ExactIndex",
    "ExactSearch",
    "FaissHNSW",
    "FaissIVF",
    "FaissIndex",
    "IntArray",
    "NNDescentIndex",
    "NNDescentSearch",
    "best_first",
    "check_shape",
    "cores",
    "exact_top_k",
    "finish",
    "float32_rows",
    "in_list_order",
    "lists_file",
    "load_faiss",
    "merge_rows",
    "neighbour_step",
    "reverse_neighbours",
    "self_join_by_blocks",
    "spans",
    "top_k",
    "top_k_lowest_index",
]
