"""Datasets and scoring: questions with their gold answers and evidence, and the metrics.

* :mod:`~chainrag.data.datasets`: the dataset formats (MuSiQue, HotpotQA, 2Wiki, LongBench,
  HippoRAG), each record checked field by field, into ``Question`` values.
* :mod:`~chainrag.data.detect`: any dataset file (``--dataset PATH``), its format (those, or
  FlashRAG's) detected from its records.
* :mod:`~chainrag.data.metrics`: EM, F1 and Recall@k against the gold evidence.

Layer: may import :mod:`chainrag.core` only.
"""
