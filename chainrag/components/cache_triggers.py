"""Retrieval triggers over a knowledge reservoir (seed 004, Memory Knowledge Reservoir)."""

from __future__ import annotations

import attrs
import numpy as np

from chainrag.registry import CACHE_TRIGGERS
from chainrag.types import FloatArray, ReservoirMatch


def enough_similar(similarities: FloatArray, threshold: float, popularity: int) -> bool:
    """True if at least ``popularity`` similarities reach ``threshold``."""
    return int(np.count_nonzero(np.asarray(similarities) >= threshold)) >= popularity


def _in_unit_range(_: object, a: attrs.Attribute[float], value: float) -> None:
    if not -1.0 <= value <= 1.0:
        raise ValueError(f"'{a.name}' is a cosine similarity, so in [-1, 1]; got {value!r}")


def _at_least_one(_: object, a: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"'{a.name}' must be >= 1, got {value!r}")


@CACHE_TRIGGERS.register("popularity")
@attrs.frozen
class Popularity:
    """Answer from memory when ≥ ``popularity`` stored entries have cosine ≥ ``threshold``.

    Seed 004's retrieval trigger (its code: τ = 0.4, popularity 3). Otherwise retrieve.
    Recipe: ``{kind: popularity, threshold: 0.4, popularity: 3}``.
    """

    threshold: float = attrs.field(default=0.4, validator=_in_unit_range)
    popularity: int = attrs.field(default=3, validator=_at_least_one)

    def __call__(self, match: ReservoirMatch) -> bool:
        return enough_similar(match.similarities, self.threshold, self.popularity)
