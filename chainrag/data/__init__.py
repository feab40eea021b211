"""Datasets and scoring: questions with their gold answers and evidence, and the metrics.

* :mod:`~chainrag.data.datasets`: the loaders, a dataset name into ``QAExample`` values.
* :mod:`~chainrag.data.names`: the names (files that ship, ``pooled:``, ``long:``, a PATH, a
  ``[START:STOP]`` slice), where their files are and their run folders.
* :mod:`~chainrag.data.formats`: MuSiQue, HotpotQA/2Wiki and LongBench records into questions.
* :mod:`~chainrag.data.detect`: any dataset file (``--dataset PATH``), its format (those, or
  HippoRAG's and FlashRAG's) detected from its records.
* :mod:`~chainrag.data.specs` and :mod:`~chainrag.data.records`: what a record must be, and
  files read and checked record by record, every problem named with its place.
* :mod:`~chainrag.data.metrics`: EM, F1 and Recall@k against the gold evidence.

Layer: may import :mod:`chainrag.core` only.
"""
