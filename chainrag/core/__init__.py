"""Types and the context: the bottom layer, with :mod:`chainrag.protocols`.

* :mod:`~chainrag.core.types`: the values every stage passes (sentences, mentions, seeds,
  expansions, predictions, ``Usage``), frozen attrs classes.
* :mod:`~chainrag.core.trace`: a prediction's step-by-step trace.
* :mod:`~chainrag.core.context`: the explicit ``Context`` a stage that reaches outside receives
  (LLM, index, retrieval runtime, model store), its fields typed by the protocols.
* :mod:`~chainrag.core.errors`: ``ChainragError`` and ``Problem``, what every refusal is made of.
* :mod:`~chainrag.core.endpoint`: a remote model's identity (what answers: the response
  cache's key) and the fields that say how it is reached (out of a recipe's digest).
* :mod:`~chainrag.core.paths`, :mod:`~chainrag.core.credentials`,
  :mod:`~chainrag.core.sqlite_file`: where caches and data live, credentials masked by value,
  the SQLite file every store builds on.

Layer: may import :mod:`chainrag.protocols` and the standard library, numpy, attrs; nothing
else of chainrag, not even under ``TYPE_CHECKING`` (the context's fields are typed by the
protocols; :mod:`chainrag.run.question` has mypy check that the index and LLM classes conform
to them). See docs/architecture.md.
"""
