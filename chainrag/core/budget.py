"""The word budget: how chainrag counts words, and what fits within so many.

    kept, used, cut = fit(units, lambda u: words(texts[u]), budget=3000)

The walk (expanders), CxtInt's context and the evidence shown to a chooser all count words
the same way — whitespace-separated tokens — and stop at the first item that does not fit
(they never skip it to fit a shorter one after it), so a budget reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def words(text: str) -> int:
    """Words in ``text``, as every budget counts them (whitespace-separated tokens)."""
    return len(text.split())


def fit(
    items: Iterable[T], size: Callable[[T], int], budget: int, used: int = 0
) -> tuple[list[T], int, bool]:
    """The leading ``items`` that fit within ``budget`` words, ``used`` already spent: (the
    items kept, the words used then, whether an item did not fit)."""
    kept: list[T] = []
    for item in items:
        n = size(item)
        if used + n > budget:
            return kept, used, True
        kept.append(item)
        used += n
    return kept, used, False
