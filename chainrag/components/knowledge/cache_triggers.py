"""Retrieval triggers over a knowledge reservoir (Shi et al., Memory Knowledge Reservoir)."""

from __future__ import annotations

import attrs
import numpy as np

from chainrag.core.types import FloatArray, ReservoirMatch
from chainrag.recipes.registry import CACHE_TRIGGERS


def enough_similar(similarities: FloatArray, threshold: float, popularity: int) -> bool:
    """True if at least ``popularity`` similarities reach ``threshold``."""
    return int(np.count_nonzero(np.asarray(similarities) >= threshold)) >= popularity


@CACHE_TRIGGERS.register("popularity")
@attrs.frozen
class Popularity:
    """Answer from memory when ≥ ``popularity`` stored entries have cosine ≥ ``threshold``.

    Shi et al.'s retrieval trigger (its code: τ = 0.4, popularity 3). Otherwise retrieve.
    Recipe: ``{kind: popularity, threshold: 0.4, popularity: 3}``.
    """

    threshold: float = attrs.field(
        default=0.4, validator=[attrs.validators.ge(-1.0), attrs.validators.le(1.0)]
    )
    popularity: int = attrs.field(default=3, validator=attrs.validators.ge(1))

    def __call__(self, match: ReservoirMatch) -> bool:
        return enough_similar(match.similarities, self.threshold, self.popularity)
