"""How far a number can be trusted: the 95% bootstrap interval of a mean over questions, and
the paired comparison of two answers on the same questions (the interval of their mean
difference and the exact sign test), and its power: the smallest difference it could detect,
and the questions a difference needs.

The detectable difference of a paired comparison is the larger of two figures: the normal
formula from the spread of its paired differences (:func:`detectable`), and a floor that holds
however small that spread is (:func:`flip_floor`): an answer that flips between wrong and right
moves F1 by :data:`FLIP` points, so a true difference of D points over n questions is about
n·D/100 flipped answers, and the paired bootstrap leaves 0 out only when at least
:func:`least_changes` questions changed the same way. A comparison in which one answer changed
has a small spread but no power to see a difference of a few points (``scripts/power_floor.py``
simulates both; docs/guide.md states the rule).

One bootstrap serves every use: a report row's F1 and EM, the report's differences against a
baseline (``chainrag report --baseline``) and ``chainrag compare``
(:mod:`chainrag.analysis.paired`). It is seeded (:data:`SEED`, :data:`RESAMPLES`), so the
same scores give the same interval, and a report is reproducible byte for byte.
"""

from __future__ import annotations

import itertools
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


FLIP = 100.0
"""F1 points one question moves when its answer flips between wrong and right: the most one
question can change a paired difference by."""


def least_changes(n: int, *, alpha: float = ALPHA) -> int:
    """The fewest of ``n`` paired questions that must change, all the same way, for the paired
    bootstrap interval to leave 0 out: the smallest k with (1 - k/n)^n < alpha/2, the chance
    that a resample draws none of them (4 from n = 9 on at two-sided 5%).

    Raises:
        ValueError: ``n`` is below 1.
    """
    if n < 1:
        raise ValueError(f"need n >= 1, got {n}")
    return next(k for k in range(1, n + 1) if (1 - k / n) ** n < alpha / 2)


def _at_least(n: int, p: float, k: int) -> float:
    """P(Binomial(n, p) >= k)."""
    return 1.0 - sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k))


def flip_floor(n: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference (points) that ``n`` paired questions detect with ``power``
    when answers change by flipping, :data:`FLIP` points each and all the same way (the flips
    most in the comparison's favour): FLIP * p, where p is the chance a question flips at which
    at least :func:`least_changes` of the ``n`` flip with probability ``power``. 17.6 points at
    n = 30, 6.0 at 90: 5.3-5.5 flipped answers expected, whatever the spread seen.

    Raises:
        ValueError: ``n`` is below 1.
    """
    k = least_changes(n, alpha=alpha)
    low, high = 0.0, 1.0
    for _ in range(50):  # bisection: the binomial tail rises with p
        mid = (low + high) / 2
        low, high = (low, mid) if _at_least(n, mid, k) >= power else (mid, high)
    return FLIP * high


def floor_needed(delta: float, *, alpha: float = ALPHA, power: float = POWER) -> int:
    """The fewest paired questions from which on the :func:`flip_floor` is at most ``delta``
    points (183 for 3 points at the defaults).

    The floor falls as n grows while :func:`least_changes` stays the same, and
    :func:`least_changes` only grows with n, up to the smallest k above ln(2/alpha), so past the
    n where it reaches that k the floor only falls: a bisection there, a scan below it.

    Raises:
        ValueError: ``delta`` is 0.
    """
    if delta == 0:
        raise ValueError("need delta != 0, got 0")

    def above(n: int) -> bool:
        return flip_floor(n, alpha=alpha, power=power) > abs(delta)

    last = math.floor(math.log(2 / alpha)) + 1
    settled = next(n for n in itertools.count(1) if least_changes(n, alpha=alpha) == last)
    if not above(settled):
        return 1 + max((n for n in range(1, settled) if above(n)), default=0)
    low, high = settled, 2 * settled  # above(low) holds
    while above(high):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if above(mid) else (low, mid)
    return high


def rule_chance(sd: float, n: int, true: float, goal: float) -> float:
    """The chance that ``n`` paired questions whose differences have spread ``sd`` pass the
    rule "95% interval above 0 and point estimate at least ``goal``" when the true difference
    is ``true`` (normal approximation): P(estimate >= max(goal, z_{0.975} * sd / sqrt(n))).
    At most one half when ``true`` is ``goal``, however large n.

    Raises:
        ValueError: ``n`` is below 1 or ``sd`` below 0.
    """
    if n < 1 or sd < 0:
        raise ValueError(f"need n >= 1 and sd >= 0, got n={n}, sd={sd}")
    se = sd / math.sqrt(n)
    bar = max(goal, z_values()[0] * se)
    if se == 0:
        return 1.0 if true >= bar else 0.0
    return 1.0 - NormalDist().cdf((bar - true) / se)


def gain_to_pass(sd: float, n: int, goal: float, *, power: float = POWER) -> float:
    """The true difference that passes the rule of :func:`rule_chance` with ``power`` at ``n``
    questions: max(goal, z_{0.975} * sd / sqrt(n)) + z_{power} * sd / sqrt(n).

    Raises:
        ValueError: ``n`` is below 1 or ``sd`` below 0.
    """
    if n < 1 or sd < 0:
        raise ValueError(f"need n >= 1 and sd >= 0, got n={n}, sd={sd}")
    z_alpha, z_power = z_values(power=power)
    se = sd / math.sqrt(n)
    return max(goal, z_alpha * se) + z_power * se


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
        """The smallest difference this comparison detects with 80% power (two-sided 5%):
        the larger of the formula from its differences' spread at its n (:func:`detectable`)
        and the floor flipped answers set (:func:`flip_floor`); None at n = 1 (no spread)."""
        if self.sd is None:
            return None
        return max(detectable(self.sd, self.n), flip_floor(self.n))

    @property
    def floor_binds(self) -> bool:
        """Whether the flip floor, not the spread, gives :attr:`detectable`."""
        return self.sd is not None and flip_floor(self.n) > detectable(self.sd, self.n)

    def needed(self, delta: float) -> int | None:
        """The questions needed to detect ``delta``: the larger of those at this spread
        (:func:`questions_needed`) and those whose flip floor is at most ``delta``
        (:func:`floor_needed`); None at n = 1, as for :attr:`detectable`."""
        if self.sd is None:
            return None
        return max(questions_needed(self.sd, delta), floor_needed(delta))

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
