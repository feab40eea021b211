"""How far a number can be trusted: the 95% bootstrap interval of a mean over questions, and
the paired comparison of two answers on the same questions (the interval of their mean
difference and the exact sign test), and its power: the smallest difference it could detect,
and the questions a difference needs.

One bootstrap serves every use: a report row's F1 and EM, the report's differences against a
baseline (``chainrag report --baseline``) and ``chainrag compare``
(:mod:`chainrag.analysis.paired`). It is seeded (:data:`SEED`, :data:`RESAMPLES`), so the
same scores give the same interval, and a report is reproducible byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import attrs
import numpy as np

RESAMPLES = 10_000
"""Bootstrap resamples per interval."""
SEED = 0
"""Seed of each interval's resampling."""
SAME = 1e-9
"""F1 differences below this count as "same"."""
POWER = 0.80
"""The chance a comparison should have of detecting a true difference (1 - beta)."""
ALPHA = 0.05
"""The two-sided false-positive rate of that detection."""


def z_values(alpha: float = ALPHA, power: float = POWER) -> tuple[float, float]:
    """z_{1-alpha/2} and z_{1-beta}, the standard normal's quantiles: 1.960 and 0.842 at the
    defaults."""
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2), normal.inv_cdf(power)


def _z_sum(alpha: float, power: float) -> float:
    return sum(z_values(alpha, power))


def detectable(sd: float, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true mean difference that ``n`` paired questions whose differences have
    standard deviation ``sd`` detect with ``power`` at two-sided ``alpha`` (normal
    approximation): (z_{1-alpha/2} + z_{1-beta}) * sd / sqrt(n), in the unit of ``sd``.

    Raises:
        ValueError: ``n`` is below 1 or ``sd`` below 0.
    """
    if n < 1 or sd < 0:
        raise ValueError(f"need n >= 1 and sd >= 0, got n={n}, sd={sd}")
    return _z_sum(alpha, power) * sd / math.sqrt(n)


def questions_needed(sd: float, delta: float, *, alpha: float = ALPHA, power: float = POWER) -> int:
    """The paired questions needed to detect a true mean difference ``delta`` when the
    differences have standard deviation ``sd``: n = ((z_{1-alpha/2} + z_{1-beta}) * sd /
    delta)^2, rounded up, and 2 at least (a spread needs two questions).

    Raises:
        ValueError: ``delta`` is 0 or ``sd`` below 0.
    """
    if delta == 0 or sd < 0:
        raise ValueError(f"need delta != 0 and sd >= 0, got delta={delta}, sd={sd}")
    return max(2, math.ceil((_z_sum(alpha, power) * sd / delta) ** 2))


@attrs.frozen
class Interval:
    """A 95% bootstrap interval of a mean score, in %."""

    low: float
    high: float

    def spans_zero(self) -> bool:
        """Whether 0 lies inside: a difference with such an interval is not beyond noise."""
        return self.low <= 0.0 <= self.high


def interval(values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED) -> Interval:
    """The 2.5th and 97.5th percentiles (in %) of the means of ``resamples`` bootstrap
    resamples of per-question scores (0..1): questions drawn with replacement, as many as
    there are.

    Raises:
        ValueError: ``values`` is empty, or ``resamples`` is below 1.
    """
    if not values:
        raise ValueError("no scores: an interval needs one question at least")
    if resamples < 1:
        raise ValueError(f"resamples must be 1 or more, got {resamples}")
    scores = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = scores[rng.integers(0, len(scores), size=(resamples, len(scores)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(float(100 * low), float(100 * high))


@attrs.frozen
class Paired:
    """One answer against a base answer on ``n`` shared questions (F1 in %)."""

    n: int
    base: float
    other: float
    low: float  # 95% paired-bootstrap interval of other - base
    high: float
    better: int
    worse: int
    same: int
    p_sign: float
    sd: float | None = None  # standard deviation of the n differences (points); None at n = 1

    @property
    def delta(self) -> float:
        return self.other - self.base

    @property
    def detectable(self) -> float | None:
        """The smallest difference this comparison detects with 80% power (two-sided 5%),
        from its differences' spread at its n (:func:`detectable`); None without a spread to
        estimate it from (one question, or every difference the same)."""
        return detectable(self.sd, self.n) if self.sd else None

    def needed(self, delta: float) -> int | None:
        """The questions needed to detect ``delta`` at this spread (:func:`questions_needed`);
        None without a spread, as for :attr:`detectable`."""
        return questions_needed(self.sd, delta) if self.sd else None

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval of the difference leaves 0 out."""
        return not Interval(self.low, self.high).spans_zero()


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven if a changed
    question were as likely to go either way."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1)) / (1 << n)  # 2**n
    return min(1.0, 2 * tail)


def paired(
    base: Sequence[float],
    other: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Paired:
    """Compare per-question scores (0..1) of the same questions, in the same order: the mean
    difference's :func:`interval`, the questions that got better, worse or stayed the same,
    the sign test over those that changed, and the differences' standard deviation (for
    the comparison's power).

    Raises:
        ValueError: the two sequences differ in length, or are empty.
    """
    if len(base) != len(other):
        raise ValueError(f"{len(base)} base scores against {len(other)}: not paired")
    if not base:
        raise ValueError("no shared questions to compare")
    a, b = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    diff = b - a
    spread = interval(diff.tolist(), resamples=resamples, seed=seed)
    better, worse = int((diff > SAME).sum()), int((diff < -SAME).sum())
    sd = None if len(diff) < 2 else 0.0 if np.ptp(diff) <= SAME else float(100 * diff.std(ddof=1))
    return Paired(len(diff), float(100 * a.mean()), float(100 * b.mean()), spread.low,
                  spread.high, better, worse, len(diff) - better - worse,
                  sign_test(better, worse), sd)  # fmt: skip
