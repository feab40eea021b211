"""Patwa et al.'s distilled reranker evaluated on held-out questions.

The student reranks each held-out question's paragraphs and is compared with the dense order
(no reranker) and with the teacher: NDCG@10 against the teacher's scores (the teacher scores 1
by definition), strict Hit@K, MRR, and milliseconds per question.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TypeVar

import attrs
import numpy as np

from chainrag.index.build import EmbeddingCache
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder
from chainrag.training.distill_fit import Pair

T = TypeVar("T")

DENSE = "none (dense order)"
"""The ranking without a reranker: the paragraphs by the dense embedder's cosine."""


@attrs.frozen
class RankingMetrics:
    """One ranking's measures, means over the held-out questions: NDCG@10 against the
    teacher's scores, strict Hit@K (K → share), MRR of the first gold paragraph, and the
    milliseconds it took per question (None when not timed: the teacher's)."""

    ndcg: float
    hit: Mapping[int, float]
    mrr: float
    ms_per_question: float | None = None

    def as_json(self) -> dict[str, float]:
        """``ndcg@10``, ``hit@K``…, ``mrr`` and (when timed) ``ms_per_question``."""
        out = {"ndcg@10": self.ndcg, **{f"hit@{k}": v for k, v in self.hit.items()}}
        out["mrr"] = self.mrr
        if self.ms_per_question is not None:
            out["ms_per_question"] = self.ms_per_question
        return out


def ndcg(order: Sequence[int], gains: np.ndarray, k: int = 10) -> float:
    """NDCG@k of ranking ``order`` with graded ``gains`` (here: the teacher's scores)."""
    ideal = np.sort(gains)[::-1][:k]
    idcg = sum(float(g) / math.log2(r + 2) for r, g in enumerate(ideal))
    dcg = sum(float(gains[i]) / math.log2(r + 2) for r, i in enumerate(order[:k]))
    return dcg / idcg if idcg > 0 else 0.0


def ranking_metrics(
    orders: Sequence[Sequence[int]],
    golds: Sequence[set[int]],
    teacher: Sequence[np.ndarray],
    ks: Sequence[int] = (2, 3, 4, 5),
) -> RankingMetrics:
    """Mean NDCG@10 against the teacher, strict Hit@K and MRR over questions."""
    both = list(zip(orders, golds, strict=True))
    ranks = [next((r for r, i in enumerate(o, 1) if i in g), None) for o, g in both]
    return RankingMetrics(
        ndcg=float(np.mean([ndcg(o, t) for o, t in zip(orders, teacher, strict=True)])),
        hit={k: float(np.mean([g <= set(o[:k]) for o, g in both])) for k in ks},
        mrr=float(np.mean([1 / r if r else 0.0 for r in ranks])),
    )


def by_score(scores: np.ndarray) -> list[int]:
    """Indexes best first; ties keep the earlier index."""
    return [int(i) for i in np.lexsort((np.arange(len(scores)), -np.asarray(scores)))]


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the seconds it took."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def held_out_rankings(
    pairs: Sequence[Pair],
    scores: np.ndarray,
    held_out: Sequence[int],
    student: Callable[[Sequence[Pair]], np.ndarray],
    dense: Embedder,
    cache: EmbeddingCache,
    ctx: Context,
) -> dict[str, RankingMetrics]:
    """The dense order, the teacher's (``scores``) and the ``student``'s on the paragraphs of
    each ``held_out`` question, measured; the dense query embedding and the student are timed
    per question (the paragraphs' embeddings come from ``cache``)."""
    orders: dict[str, list[list[int]]] = {DENSE: [], "teacher": [], "student": []}
    golds, gains, seconds = [], [], {DENSE: 0.0, "student": 0.0}
    rows_of_question: dict[int, list[int]] = {}
    for i, pair in enumerate(pairs):
        rows_of_question.setdefault(pair.question, []).append(i)
    for q in held_out:
        rows = rows_of_question[q]
        group = [pairs[i] for i in rows]
        passages = cache.embed(dense, [p.passage for p in group], ctx, role="passage")
        query, spent = timed(partial(dense, [group[0].query], ctx, role="query"))
        orders[DENSE].append(by_score(passages @ query[0]))
        seconds[DENSE] += spent
        student_scores, spent = timed(partial(student, group))
        seconds["student"] += spent
        orders["student"].append(by_score(student_scores))
        orders["teacher"].append(by_score(scores[rows]))
        golds.append({j for j, p in enumerate(group) if p.gold})
        gains.append(scores[rows])
    n = max(len(held_out), 1)
    return {
        name: attrs.evolve(
            ranking_metrics(o, golds, gains),
            ms_per_question=1000 * seconds[name] / n if name in seconds else None,
        )
        for name, o in orders.items()
    }
