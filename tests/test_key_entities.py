from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrag.components.index.key_entities import (
    BM25KeyEntities,
    bm25_importance,
    entity_vocabulary,
    top_fraction,
)

rows = st.lists(st.lists(st.sampled_from(list("abcdefg")), max_size=5), max_size=15)


def reference_importance(
    entities: list[list[str]], k1: float = 1.5, b: float = 0.75
) -> dict[str, float]:
    """Straight from the definition: mean BM25 score of the one-token query over sentences."""
    n = len(entities)
    avgdl = sum(map(len, entities)) / n if n else 1.0
    avgdl = avgdl or 1.0
    vocab = sorted({e for row in entities for e in row})
    df = {e: sum(e in row for row in entities) for e in vocab}
    idf = {e: math.log((n - df[e] + 0.5) / (df[e] + 0.5)) for e in vocab}
    mean_idf = sum(idf.values()) / len(idf) if idf else 0.0
    idf = {e: (0.25 * mean_idf if v < 0 else v) for e, v in idf.items()}
    out = {}
    for e in vocab:
        total = 0.0
        for row in entities:
            tf = row.count(e)
            total += idf[e] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(row) / avgdl))
        out[e] = total / n
    return out


@given(rows)
def test_bm25_importance_matches_the_definition(entities: list[list[str]]) -> None:
    names, counts = entity_vocabulary(entities)
    got = dict(zip(names, bm25_importance(counts).tolist(), strict=True))
    want = reference_importance(entities)
    assert got.keys() == want.keys()
    for name in got:
        assert got[name] == pytest.approx(want[name], rel=1e-4, abs=1e-6)


@given(rows, st.sampled_from([10.0, 60.0, 100.0]))
def test_keeps_the_top_alpha_percent(entities: list[list[str]], alpha: float) -> None:
    keys = BM25KeyEntities(alpha=alpha)(entities)
    assert len(keys) == len(entities)
    scores = reference_importance(entities)
    for row, kept in zip(entities, keys, strict=True):
        unique = set(row)
        assert len(kept) == top_fraction(len(unique), alpha)
        assert {e.name for e in kept} <= unique
        dropped = unique - {e.name for e in kept}
        if kept and dropped:
            assert min(e.score for e in kept) >= max(scores[d] for d in dropped) - 1e-6


def test_alpha_100_keeps_every_entity() -> None:
    entities = [["a", "b", "c"], ["a"], []]
    assert [sorted(e.name for e in row) for row in BM25KeyEntities(alpha=100)(entities)] == [
        ["a", "b", "c"], ["a"], []
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("count", "alpha", "kept"),
    [(0, 60, 0), (1, 60, 1), (2, 60, 2), (5, 60, 3), (10, 60, 6), (3, 10, 1)],
)
def test_top_fraction_rounds_up(count: int, alpha: float, kept: int) -> None:
    assert top_fraction(count, alpha) == kept


def test_alpha_is_validated() -> None:
    with pytest.raises(ValueError, match=r"'alpha' must be <= 100\.0"):
        BM25KeyEntities(alpha=150)
