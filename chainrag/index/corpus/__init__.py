"""Corpus indexes: one sentence graph over a shared corpus, built in a stream and resumable.

Layer: index and graph. May import types, protocols, recipes, components, the datasets,
:mod:`chainrag.index.build` and :mod:`chainrag.index.graph`; never the LLM layer, methods, runs
or the CLI.

- :mod:`~chainrag.index.corpus.source`: passages read as a stream from corpus files and named
  corpora;
- :mod:`~chainrag.index.corpus.build`: the staged build (split + NER, embeddings, key entities,
  edge layers), resumable at every finished batch, its encoding stages run by an engine;
- :mod:`~chainrag.index.corpus.store`: the folder format and
  :class:`~chainrag.index.corpus.store.CorpusIndex`, the opened index (memory-mapped) that
  retrieval searches and walks;
- :mod:`~chainrag.index.corpus.indexing`: what ``chainrag index`` builds from a recipe file, a
  dataset's per-context indexes or one streamed corpus index, with typed summaries.
"""
