"""Indexes and the sentence graph: what retrieval and expansion read.

* :mod:`~chainrag.index.graph`: the ``SentenceGraph`` (one scipy sparse matrix per edge layer)
  and the chunk index, with their on-disk format.
* :mod:`~chainrag.index.build`: building a question's (or a pool's) index from a recipe's
  ``index:``, cached by content hash.
* :mod:`~chainrag.index.corpus`: the corpus index, built in a stream and resumable, opened
  memory-mapped (``chainrag index``), locally or with Ray.
* :mod:`~chainrag.index.reservoir`: the knowledge reservoir (Shi et al.), a store of past answers.

Layer: may import :mod:`chainrag.core`, :mod:`chainrag.protocols`, :mod:`chainrag.data`,
:mod:`chainrag.recipes`, :mod:`chainrag.llm` and :mod:`chainrag.components` (the edge builders,
embedders and searches an index is built with); never methods, runs, reports or the CLI.
"""
