"""Benchmarks run with ``make bench`` (pytest-benchmark); they are never part of ``make test``."""
