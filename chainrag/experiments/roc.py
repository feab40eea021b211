"""ROC statistics of a score against yes/no labels: the area under the curve, its interval
over bootstrap resamples of groups, and the threshold with the best balanced accuracy (the
judge probes' measures, ``chainrag experiment judge-steps``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The probability that a random positive scores above a random negative (ties count
    half): the Mann–Whitney form of ROC AUC; NaN without both classes."""
    from scipy.stats import rankdata

    y = np.asarray(labels, dtype=bool)
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return math.nan
    ranks = rankdata(np.asarray(scores, dtype=float))
    return float((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def auc_interval(
    scores: Sequence[float], labels: Sequence[bool], groups: Sequence[str], resamples: int = 2000
) -> tuple[float, float]:
    """A 95% percentile interval of the ROC AUC over bootstrap resamples of ``groups`` (the
    questions), seeded so that a table is made the same way twice."""
    rng = np.random.default_rng(0)
    names = sorted(set(groups))
    members = {name: [i for i, g in enumerate(groups) if g == name] for name in names}
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    found = []
    for _ in range(resamples):
        picked = rng.choice(len(names), size=len(names), replace=True)
        rows = [i for n in picked for i in members[names[n]]]
        auc = roc_auc(s[rows].tolist(), y[rows].tolist())
        if not math.isnan(auc):
            found.append(auc)
    low, high = np.percentile(found, [2.5, 97.5])
    return float(low), float(high)


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The threshold t ("yes" where score ≥ t) with the best balanced accuracy, the mean of
    the yes-rate on positives and the no-rate on negatives; the lowest such t."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    best, chosen = -1.0, float(s.min())
    for t in np.unique(s):
        said = s >= t
        balanced = (said[y].mean() + (~said[~y]).mean()) / 2
        if balanced > best + 1e-12:
            best, chosen = float(balanced), float(t)
    return chosen
