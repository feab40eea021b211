"""Built-in components, by family as the pipeline runs. Importing this package registers them
(it loads no model).

- :mod:`~chainrag.components.index`: chunkers, sentence splitting and NER, the key-entity
  filter, edge builders, embedders and the linear adapter: a context becomes a graph.
- :mod:`~chainrag.components.retrieval`: seed retrievers, rerankers, expanders and their
  sufficiency judges, query vectors, vector searches: a question finds its evidence.
- :mod:`~chainrag.components.reasoning`: decomposers, rewrite triggers, rewriters and
  summarizers, answerers, integrators, choosers, comparisons by rule, answer forms.
- :mod:`~chainrag.components.knowledge`: Query Rewriter+, knowledge filters, cache triggers.
- :mod:`~chainrag.components.phrases`: HippoRAG's OpenIE, phrase graph, query linking and
  Personalized PageRank.

Each family mirrors its module of :mod:`chainrag.protocols`.

Layer: may import :mod:`chainrag.core`, :mod:`chainrag.protocols`, :mod:`chainrag.recipes`
(to register) and :mod:`chainrag.llm` (prompts, structured replies); never the index, methods,
runs, reports or the CLI.
"""

from chainrag.components import index, knowledge, phrases, reasoning, retrieval

__all__ = ["index", "knowledge", "phrases", "reasoning", "retrieval"]
