"""Patwa et al.'s adapter evaluated: separation and strict Hit@K, before and after.

Separation accuracy: does cos(q, p) above a threshold tell gold from negative? The threshold
is chosen on the training pairs and applied to the validation pairs; the oracle accuracy on
validation, as the seed's code computes it, is reported beside it, with Pearson r between
cosine and label. Strict Hit@K: all gold paragraphs in the top K of the question's own
paragraphs, on the dev sets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from chainrag.core.types import FloatArray, QAExample
from chainrag.protocols.index import EmbedRole
from chainrag.training.adapter_fit import PairSet
from chainrag.training.common import passage_text

EVAL_NEGATIVES = 3
"""Negatives per question in the separation test: 2 distractors and the other question's
gold paragraph, the seed's 2-positive/3-negative composition (all 18 MuSiQue distractors
would make "always negative" score 85%)."""


def labelled_cosines(
    queries: FloatArray, passages: FloatArray, pairs: PairSet, questions: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of the (question, positive|negative) pairs of ``questions`` and their labels:
    every positive, and :data:`EVAL_NEGATIVES` negatives (the last is the synthetic one)."""
    cos, labels = [], []
    for q in questions:
        negatives = pairs.negatives[q]
        sampled = (*negatives[: EVAL_NEGATIVES - 1], *negatives[-1:]) if negatives else ()
        for rows, label in ((pairs.positives[q], 1.0), (tuple(dict.fromkeys(sampled)), 0.0)):
            for p in rows:
                cos.append(float(queries[q] @ passages[p]))
                labels.append(label)
    return np.asarray(cos), np.asarray(labels)


def best_threshold(cos: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(threshold, accuracy) maximising accuracy of ``cos ≥ threshold`` ⇔ label 1."""
    if cos.size == 0:
        return 0.0, 0.0
    candidates = np.unique(np.concatenate([cos, [cos.max() + 1e-6]]))
    accuracy = [float(np.mean((cos >= t) == (labels == 1))) for t in candidates]
    best = int(np.argmax(accuracy))
    return float(candidates[best]), accuracy[best]


@attrs.frozen
class Separation:
    """How well cos(q, p) above a threshold tells gold from negative paragraphs.

    ``accuracy``: on the validation pairs, with the ``threshold`` that is best on the training
    pairs (where it scores ``train_accuracy``); ``oracle_accuracy``: with the threshold best on
    the validation pairs themselves, as the seed's code reports it; ``pearson_r``: between
    cosine and label on the validation pairs.
    """

    accuracy: float
    oracle_accuracy: float
    pearson_r: float
    threshold: float
    train_accuracy: float


def separation(
    queries: FloatArray,
    passages: FloatArray,
    pairs: PairSet,
    train_questions: Sequence[int],
    validation_questions: Sequence[int],
) -> Separation:
    """Separation accuracy on validation with the training threshold, the oracle one, and r."""
    threshold, train_accuracy = best_threshold(
        *labelled_cosines(queries, passages, pairs, train_questions)
    )
    cos, labels = labelled_cosines(queries, passages, pairs, validation_questions)
    accuracy = float(np.mean((cos >= threshold) == (labels == 1))) if cos.size else 0.0
    r = float(np.corrcoef(cos, labels)[0, 1]) if cos.size > 1 and cos.std() > 0 else 0.0
    return Separation(
        accuracy=accuracy,
        oracle_accuracy=best_threshold(cos, labels)[1],
        pearson_r=r,
        threshold=threshold,
        train_accuracy=train_accuracy,
    )


def strict_hits(
    examples: Sequence[QAExample],
    embed: Callable[[Sequence[str], EmbedRole], FloatArray],
    ks: Sequence[int] = (2, 3, 4, 5),
) -> dict[int, float]:
    """Strict Hit@K: share of questions whose gold paragraphs are all in the top K of their
    own paragraphs ranked by cosine."""
    kept = [e for e in examples if e.supporting_passages]
    if not kept:
        return dict.fromkeys(ks, 0.0)
    texts = [passage_text(p.title, p.text) for e in kept for p in e.passages]
    vectors = embed(texts, "passage")
    queries = embed([e.question for e in kept], "query")
    hits = dict.fromkeys(ks, 0)
    start = 0
    for n, example in enumerate(kept):
        block = vectors[start : start + len(example.passages)]
        start += len(example.passages)
        order = np.lexsort((np.arange(len(block)), -(block @ queries[n])))
        gold = set(example.supporting_passages)
        for k in ks:
            hits[k] += gold <= {int(i) for i in order[:k]}
    return {k: hits[k] / len(kept) for k in ks}
