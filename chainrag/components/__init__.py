"""Built-in components. Importing this package registers them (it loads no model).

One module per stage family: chunkers, the NER and key-entity scorers, edge builders,
embedders and searches, rerankers and retrievers, expanders, judges, rewrite and cache
triggers, knowledge filters, the reasoning steps (decompose, answer, integrate), and
comparisons decided by rule.

Layer: may import :mod:`chainrag.core`, :mod:`chainrag.protocols`, :mod:`chainrag.recipes`
(to register) and :mod:`chainrag.llm` (prompts, structured replies); never the index, methods,
runs, reports or the CLI.
"""

from chainrag.components import (
    cache_triggers,
    chunkers,
    comparisons,
    edges,
    embedders,
    expanders,
    judges,
    key_entities,
    knowledge,
    linear_adapter,
    reasoning,
    rerankers,
    retrievers,
    rewrite_triggers,
    search,
    spacy_nlp,
)

__all__ = [
    "cache_triggers",
    "chunkers",
    "comparisons",
    "edges",
    "embedders",
    "expanders",
    "judges",
    "key_entities",
    "knowledge",
    "linear_adapter",
    "reasoning",
    "rerankers",
    "retrievers",
    "rewrite_triggers",
    "search",
    "spacy_nlp",
]
