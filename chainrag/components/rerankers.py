"""Rerankers that need no model. Model-backed rerankers live beside the embedders."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from chainrag.context import Context
from chainrag.registry import RERANKERS
from chainrag.types import Hit


@RERANKERS.register("none")
@attrs.frozen
class NoRerank:
    """Keeps the first-stage order: the "no reranker" setting. Recipe: ``{kind: none}``."""

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        return tuple(hits)
