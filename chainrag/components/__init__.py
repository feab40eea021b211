"""Built-in components. Importing this package registers them (it loads no model)."""

from chainrag.components import (
    cache_triggers,
    chunkers,
    edges,
    embedders,
    expanders,
    judges,
    key_entities,
    knowledge,
    methods,
    methods_seeds,
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
    "edges",
    "embedders",
    "expanders",
    "judges",
    "key_entities",
    "knowledge",
    "methods",
    "methods_seeds",
    "reasoning",
    "rerankers",
    "retrievers",
    "rewrite_triggers",
    "search",
    "spacy_nlp",
]
