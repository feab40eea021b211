"""Experiments beyond a plain run: probes that isolate one stage, and the recurring-question
experiment of Shi et al..

* :mod:`~chainrag.experiments.recurring`: questions asked again after a delay, the knowledge
  reservoir answering them (``chainrag experiment recurring``), resumable in its own folder.
* :mod:`~chainrag.experiments.lost_in_retrieval`, :mod:`~chainrag.experiments.filter_probe`,
  :mod:`~chainrag.experiments.judge`: probes of one stage each, saved by
  :mod:`~chainrag.experiments.probes`; :mod:`~chainrag.experiments.shares` prints their table.
* :mod:`~chainrag.experiments.judge_steps` (with :mod:`~chainrag.experiments.walk_steps`):
  the sufficiency judges probed at a walk's steps; its measures in
  :mod:`~chainrag.experiments.roc` (ROC AUC, its interval, a threshold),
  :mod:`~chainrag.experiments.judge_combination` (the logistic ``combined`` judge) and
  :mod:`~chainrag.experiments.judge_steps_table` (its table).

Layer: may import the run package and every layer below it (methods, index, components, llm,
recipes, data, core); never reports, analyses or the CLI.
"""
