"""Query-time retrieval (ChainRAG §3.2): seeds, rerank, graph expansion and its sufficiency checks.

Modules:
    ``retrievers``: seed retrievers (dense + rerank, BM25, LM-guided, tree).
    ``hipporag``: HippoRAG's seed retriever (phrase graph, linking, Personalized PageRank).
    ``rerankers``: rerankers (dense, cross-encoder, FlagReranker).
    ``remote_rerankers``: any rerank model litellm reaches, each score paid for once.
    ``expanders``: graph expanders under a word budget.
    ``judges``: the sufficiency judges an expander asks.
    ``vectors``: a query's vector.
    ``search``: vector searches (exact, FAISS, blocked IVF, NN-descent).

Protocols: :mod:`chainrag.protocols.retrieval` (searches: :mod:`chainrag.protocols.index`).
"""

from chainrag.components.retrieval import (
    expanders,
    hipporag,
    judges,
    remote_rerankers,
    rerankers,
    retrievers,
    search,
    vectors,
)

__all__ = [
    "expanders",
    "hipporag",
    "judges",
    "remote_rerankers",
    "rerankers",
    "retrievers",
    "search",
    "vectors",
]
