"""Rerankers: re-score candidate hits against the query with a cross-encoder.

``flag_reranker`` uses FlagEmbedding's FlagReranker and ``cross_encoder`` sentence-transformers'
CrossEncoder, each from a local model folder (no reranker ships offline here: a user with
bge-reranker weights points ``model_path`` at them; issue 8's distilled student works with
``cross_encoder``). A path that does not exist is an error when the recipe is loaded.
``none`` keeps the first-stage order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from chainrag.context import Context
from chainrag.registry import RERANKERS
from chainrag.types import Hit


def rescored(hits: Sequence[Hit], scores: Sequence[float]) -> tuple[Hit, ...]:
    """``hits`` with new scores, best first; equal scores keep the first-stage order."""
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
    return tuple(Hit(hits[i].index, float(scores[i])) for i in order)


def _existing(_: object, a: attrs.Attribute[str], value: str) -> None:
    if not Path(value).exists():
        raise ValueError(f"'{a.name}' {value!r} does not exist (a local model folder is needed)")


@RERANKERS.register("none")
@attrs.frozen
class NoRerank:
    """Keeps the first-stage order: the "no reranker" setting. Recipe: ``{kind: none}``."""

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        return tuple(hits)


def _minilm_example() -> dict[str, str]:
    """A folder that loads (with an untrained scoring head): enough for conformance checks."""
    from chainrag.components.embedders import offline_minilm_path

    return {"model_path": offline_minilm_path()}


@RERANKERS.register("flag_reranker", example=_minilm_example)
@attrs.frozen
class FlagRerankerComponent:
    """FlagEmbedding's FlagReranker (the paper's bge-reranker) from a local folder, on the CPU.

    Recipe: ``{kind: flag_reranker, model_path: /models/bge-reranker-base}``.
    """

    model_path: str = attrs.field(validator=_existing)
    batch_size: int = attrs.field(default=32, validator=attrs.validators.ge(1))
    max_length: int = attrs.field(default=512, validator=attrs.validators.ge(8))

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        if not hits:
            return ()

        def load() -> Any:
            from FlagEmbedding import FlagReranker

            return FlagReranker(self.model_path, use_fp16=False, devices="cpu")

        model = ctx.models.get(("flag_reranker", self.model_path), load)
        scores = model.compute_score(
            [[query, t] for t in texts], batch_size=self.batch_size, max_length=self.max_length
        )
        return rescored(hits, np.atleast_1d(np.asarray(scores, dtype=np.float64)).tolist())


@RERANKERS.register("cross_encoder", example=_minilm_example)
@attrs.frozen
class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder, on the CPU.

    Recipe: ``{kind: cross_encoder, model_path: /models/my-distilled-reranker}``.
    """

    model_path: str = attrs.field(validator=_existing)
    batch_size: int = attrs.field(default=32, validator=attrs.validators.ge(1))

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        if not hits:
            return ()

        def load() -> Any:
            from sentence_transformers import CrossEncoder

            return CrossEncoder(self.model_path, device="cpu")

        model = ctx.models.get(("cross_encoder", self.model_path), load)
        scores = model.predict(
            [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        return rescored(hits, np.asarray(scores, dtype=np.float64).reshape(-1).tolist())
