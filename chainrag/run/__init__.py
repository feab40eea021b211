"""Running recipes over datasets, and the run folders they fill.

* :mod:`~chainrag.run.question`: answering one question with a recipe (its index, the context,
  the method) and scoring it into a :class:`~chainrag.run.record.RunRecord`.
* :mod:`~chainrag.run.session`: one session of a recipe over a dataset's pending questions, in a
  thread pool with bounded LLM requests in flight; Ctrl-C or SIGTERM cancels the rest, a second
  one stops at once (:mod:`~chainrag.run.interrupts`: the pool it can leave behind, the signals
  held while a line is written).
* :mod:`~chainrag.run.jobs`: recipes x datasets into their run folders, sharing one LLM per
  ``llm:`` in this process, or each as a Ray task.
* :mod:`~chainrag.run.estimate`: a run's calls, tokens, dollars and wall time, scaled up from
  a sample (or the run folder's answered questions) before the run is made;
  :mod:`~chainrag.run.encoder_costs`: its remote encoders' tokens, searches and dollars.
* :mod:`~chainrag.run.folder`: the run folder (``run.json``, ``recipe.yaml``, the lines), and
  :mod:`~chainrag.run.files` what it is made of: durable JSON lines read back to resume (the
  recurring experiment's folders use them too), atomic JSON, the folder lock.
* :mod:`~chainrag.run.record` and :mod:`~chainrag.run.meta`: the typed line of an answered or
  failed question (older lines upgraded where they are read) and the typed ``run.json``, read
  and written through a cattrs converter; :mod:`~chainrag.run.provenance`: the identities
  ``run.json`` records (file fingerprints, the recipe digest, package versions, model files);
  :mod:`~chainrag.run.encoders`: the remote encoders it records, and where their values came
  from (the provider or the store).

Layer: ``record``, ``meta``, ``provenance``, ``encoders``, ``files`` and ``folder`` may import
the types, the structuring converter, recipes and the errors, never the LLM layer nor the CLI
(the report and the analyses read run folders without loading either); ``question``, ``session`` and
``jobs`` may import the LLM layer, the index, data and corpus packages too (and ``estimate``,
which runs a sample as ``jobs`` runs a run); nothing here imports the CLI. This ``__init__``
imports nothing, so that reading records pulls in no more than it needs.
"""

from chainrag import _callable_package

_callable_package(__name__)  # chainrag.run(...) calls chainrag.api.run
