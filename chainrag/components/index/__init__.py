"""Index-time stages (ChainRAG §3.1, the sentence graph): how a context becomes units and a graph.

Modules:
    ``chunkers``: fixed-size chunks (NaiveRAG, Iter-RetGen).
    ``spacy_nlp``: sentence splitting and NER (spaCy).
    ``key_entities``: the BM25 key-entity filter.
    ``edges``: the edge builders: entity co-occurrence, semantic similarity, structural adjacency.
    ``embedders``: embedders: a local model folder, hashed bag of words.
    ``linear_adapter``: a trained linear adapter over a base embedder (Patwa et al.).
    ``remote_embedders``: any embedding model litellm reaches, each vector paid for once.

Protocols: :mod:`chainrag.protocols.index`.
"""

from chainrag.components.index import (
    chunkers,
    edges,
    embedders,
    key_entities,
    linear_adapter,
    remote_embedders,
    spacy_nlp,
)

__all__ = [
    "chunkers",
    "edges",
    "embedders",
    "key_entities",
    "linear_adapter",
    "remote_embedders",
    "spacy_nlp",
]
