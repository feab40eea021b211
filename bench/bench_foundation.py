"""Cost of the foundation itself: loading a recipe, and the SA edge builder at three sizes.

    .venv/bin/python -m pytest bench/bench_foundation.py --benchmark-only

Side by side in one run for SA: the vectorised banded build against a straightforward
per-pair Python loop (how a graph library build adds the same edges one by one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from chainrag.components.index.edges import adjacency_band
from chainrag.recipes.recipe import load_recipe

ROOT = Path(__file__).resolve().parent.parent
SIZES = [200, 2_000, 20_000]


def _passages(n: int) -> list[int]:
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 12, size=n)
    return np.repeat(np.arange(n), lengths)[:n].tolist()


def _loop_band(passages: list[int], window: int) -> sparse.csr_matrix:
    n = len(passages)
    rows, cols, data = [], [], []
    for i in range(n):
        for j in range(max(0, i - window), min(n, i + window + 1)):
            if i != j and passages[i] == passages[j]:
                rows.append(i)
                cols.append(j)
                data.append(1.0 / (abs(i - j) + 1))
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, n), dtype=np.float32)


def test_load_recipe(benchmark) -> None:  # type: ignore[no-untyped-def]
    benchmark(load_recipe, ROOT / "recipes" / "llms" / "glm-4-plus.yaml")


@pytest.mark.parametrize("n", SIZES)
def test_sa_vectorised(benchmark, n: int) -> None:  # type: ignore[no-untyped-def]
    passages = _passages(n)
    benchmark.group = f"sa n={n}"
    benchmark(adjacency_band, passages, 3, "inverse_distance", False)


@pytest.mark.parametrize("n", SIZES)
def test_sa_python_loop(benchmark, n: int) -> None:  # type: ignore[no-untyped-def]
    passages = _passages(n)
    benchmark.group = f"sa n={n}"
    out = benchmark(_loop_band, passages, 3)
    assert (out != adjacency_band(passages, 3, "inverse_distance", False)).nnz == 0
