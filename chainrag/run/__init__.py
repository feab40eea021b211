"""Running recipes over datasets and the run folders they fill.

* :mod:`~chainrag.run.record`: the typed line of one answered question (:class:`RunRecord`) and
  of one failed question (:class:`QuestionError`), read and written through a cattrs converter.
* :mod:`~chainrag.run.meta`: the typed ``run.json`` of a run folder (:class:`RunMeta`, its
  sessions) and where its provenance comes from (recipe digest, package versions, models).

Layer: run records may import the types, the structuring converter, recipes and the errors;
never the LLM layer nor the CLI (the analyses read records without loading either). This
``__init__`` imports nothing, so that reading records pulls in no more than that.
"""
