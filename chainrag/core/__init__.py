"""The values and the tools every layer builds on: the bottom layer.

* :mod:`~chainrag.core.types`: the values every stage passes (sentences, mentions, seeds,
  expansions, predictions, ``Usage``), frozen attrs classes; :mod:`~chainrag.core.notes`:
  what a method says of how it answers, written into each record.
* :mod:`~chainrag.core.trace`: a prediction's step-by-step trace.
* :mod:`~chainrag.core.context`: what a stage's context is made of below the protocols (the
  model store, the lock around heavy imports, a missing resource's errors);
  :mod:`~chainrag.core.retrieval`: what retrieval derives from an index, bounded. The context
  itself is a Protocol (:mod:`chainrag.protocols.context`), implemented by
  :class:`chainrag.context.StageContext`.
* :mod:`~chainrag.core.errors`: ``ChainragError`` and ``Problem``, what every refusal is made of.
* :mod:`~chainrag.core.endpoint`: a remote model's identity (what answers: the response
  cache's key) and the fields that say how it is reached (out of a recipe's digest).
* :mod:`~chainrag.core.paths`, :mod:`~chainrag.core.credentials`,
  :mod:`~chainrag.core.sqlite_file`: where caches and data live, credentials masked by value,
  the SQLite file every store builds on.

Layer: the bottom; may import the standard library, numpy, attrs; nothing else of chainrag,
not even under ``TYPE_CHECKING`` (the protocols are the layer above it). See
docs/architecture.md.
"""
