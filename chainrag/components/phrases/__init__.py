"""HippoRAG's stages (Gutiérrez et al. 2024): its LLM OpenIE, the phrase graph built from it,
query linking, Personalized PageRank. The seed retriever that runs them over an index is
``components.retrieval.hipporag``.

Modules:
    ``openie``: passage NER then triples, read as the authors' code reads them, stored by text.
    ``graph``: phrases, triple and synonymy edges, passage × phrase counts.
    ``linking``: the query's named entities linked to their nearest phrases.
    ``pagerank``: Personalized PageRank over the phrase graph.

Protocols: :mod:`chainrag.protocols.phrases`.
"""

from chainrag.components.phrases import graph, linking, openie, pagerank

__all__ = ["graph", "linking", "openie", "pagerank"]
