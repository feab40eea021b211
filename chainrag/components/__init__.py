"""Built-in components. Importing this package registers them (it loads no model).

One module per stage family: chunkers, the NER and key-entity scorers, edge builders,
embedders and searches, rerankers and retrievers, expanders, judges, rewrite and cache
triggers, knowledge filters, the reasoning steps (decomposers, sub_questions: rewrite and
summarise, answerers, integrators, choosers, answer_form; ``reasoning`` names them all as
before), and comparisons decided by rule.

Layer: may import :mod:`chainrag.core`, :mod:`chainrag.protocols`, :mod:`chainrag.recipes`
(to register) and :mod:`chainrag.llm` (prompts, structured replies); never the index, methods,
runs, reports or the CLI.
"""

from chainrag.components import (
    answer_form,
    answerers,
    cache_triggers,
    choosers,
    chunkers,
    comparisons,
    decomposers,
    edges,
    embedders,
    expanders,
    integrators,
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
    sub_questions,
)

__all__ = [
    "answer_form",
    "answerers",
    "cache_triggers",
    "choosers",
    "chunkers",
    "comparisons",
    "decomposers",
    "edges",
    "embedders",
    "expanders",
    "integrators",
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
    "sub_questions",
]
