"""Rerankers: re-score candidate hits against the query with a cross-encoder.

``flag_reranker`` uses FlagEmbedding's FlagReranker and ``cross_encoder`` sentence-transformers'
CrossEncoder, each from a local model folder (no reranker ships offline here: a user with
bge-reranker weights points ``model_path`` at them; issue 8's distilled student works with
``cross_encoder``). A path that does not exist is an error when the model is loaded (a recipe
naming it validates on a machine without it).
``none`` keeps the first-stage order; ``dense`` orders by embedding cosine with the query (the
offline stand-in where the paper reranks with a cross-encoder and none is at hand).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from chainrag.components.retrieval.vectors import query_vector, text_vectors
from chainrag.core.context import IMPORTS, model_folder
from chainrag.core.device import PLACED, Device, resolve
from chainrag.core.types import Hit
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder
from chainrag.recipes.registry import RERANKERS


def rescored(hits: Sequence[Hit], scores: Sequence[float]) -> tuple[Hit, ...]:
    """``hits`` with new scores, best first; equal scores keep the first-stage order."""
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
    return tuple(Hit(hits[i].index, float(scores[i])) for i in order)


def rerank_with(
    score: Callable[[list[list[str]]], Any],
    query: str,
    hits: Sequence[Hit],
    texts: Sequence[str],
) -> tuple[Hit, ...]:
    """Hits rescored by ``score`` of their (query, text) pairs, best first; ``score`` (which
    loads the model) is not called when there are no hits."""
    if not hits:
        return ()
    scores = np.atleast_1d(np.asarray(score([[query, t] for t in texts]), dtype=np.float64))
    return rescored(hits, scores.reshape(-1).tolist())


def cross_encoder(kind: str, model_path: str, ctx: Context, device: Device = "cpu") -> Any:
    """The sentence-transformers CrossEncoder in the local folder ``model_path``, on
    ``device`` (:func:`chainrag.core.device.resolve`), loaded once per (kind, path, device) by
    the context's model store; ``kind`` names the component in the errors."""
    where = resolve(device, f"the {kind} component")

    def load() -> Any:
        with IMPORTS:
            from sentence_transformers import CrossEncoder

            return CrossEncoder(model_folder(kind, "model_path", model_path), device=where)

    return ctx.models.get((kind, model_path, where), load)


def flag_reranker(model_path: str, ctx: Context, device: Device = "cpu") -> Any:
    """FlagEmbedding's FlagReranker in the local folder ``model_path``, on ``device``, in
    fp32, loaded once per (path, device) by the context's model store."""
    where = resolve(device, "the flag_reranker component")

    def load() -> Any:
        folder = model_folder("flag_reranker", "model_path", model_path)
        with IMPORTS:
            from FlagEmbedding import FlagReranker

            return FlagReranker(folder, use_fp16=False, devices=where)

    return ctx.models.get(("flag_reranker", model_path, where), load)


@RERANKERS.register("none")
@attrs.frozen
class NoRerank:
    """Keeps the first-stage order: the "no reranker" setting. Recipe: ``{kind: none}``."""

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        return tuple(hits)


@RERANKERS.register("dense", example={"embedder": {"kind": "hashed_bow", "dim": 16}})
@attrs.frozen
class DenseRerank:
    """Orders candidates by cosine between their embedding and the query's, with ``embedder``
    or, when unset, the searched index's own embedder. No extra model: the offline stand-in for
    the paper's cross-encoder, e.g. for CxtInt's "reranked against the original question".
    With the index's embedder, a candidate that is one of the index's units takes the index's
    vector and the query is embedded once per index (:mod:`chainrag.components.retrieval.vectors`):
    nothing the index holds is embedded again. Recipe: ``{kind: dense}``.
    """

    embedder: Embedder | None = None

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        if not hits:
            return ()
        index_embedder = ctx.index.embedder if ctx.index is not None else None
        embedder = self.embedder or index_embedder
        if embedder is None:
            raise ValueError(
                "the dense reranker needs an embedder: set {kind: dense, embedder: ...}, or use "
                "it where an index is searched"
            )
        texts = list(texts[: len(hits)])
        index = ctx.index
        if index is not None and embedder == index_embedder:
            query_row, vectors = query_vector(index, query, ctx)[0], text_vectors(index, texts, ctx)
        else:
            query_row = embedder([query], ctx, role="query")[0]  # rows are L2-normalised
            vectors = embedder(texts, ctx, role="passage")
        return rescored(hits, (vectors @ query_row).tolist())


def _minilm_example() -> dict[str, str]:
    """A folder that loads (with an untrained scoring head): enough for conformance checks."""
    from chainrag.components.index.embedders import offline_minilm_path

    return {"model_path": offline_minilm_path()}


@attrs.frozen
class LocalModelReranker(abc.ABC):
    """A reranker model in the local folder ``model_path`` that scores (query, text) pairs
    ``batch_size`` at a time; a subclass says how in :meth:`scores`."""

    model_path: str
    batch_size: int = attrs.field(default=32, validator=attrs.validators.ge(1))
    device: Device = attrs.field(default="auto", metadata=PLACED)
    """``auto`` (a GPU when torch sees one), ``cpu`` or ``cuda`` (:mod:`chainrag.core.device`)."""

    @abc.abstractmethod
    def scores(self, pairs: list[list[str]], ctx: Context) -> Any:
        """The model's scores of ``pairs`` (the model loaded through ``ctx.models``)."""

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]:
        return rerank_with(lambda pairs: self.scores(pairs, ctx), query, hits, texts)


@RERANKERS.register("flag_reranker", example=_minilm_example)
@attrs.frozen
class FlagRerankerComponent(LocalModelReranker):
    """FlagEmbedding's FlagReranker (the paper's bge-reranker) from a local folder, in fp32.

    Recipe: ``{kind: flag_reranker, model_path: /models/bge-reranker-base}``.
    """

    max_length: int = attrs.field(default=512, validator=attrs.validators.ge(8))

    def scores(self, pairs: list[list[str]], ctx: Context) -> Any:
        model = flag_reranker(self.model_path, ctx, self.device)
        return model.compute_score(pairs, batch_size=self.batch_size, max_length=self.max_length)


@RERANKERS.register("cross_encoder", example=_minilm_example)
@attrs.frozen
class CrossEncoderReranker(LocalModelReranker):
    """A sentence-transformers CrossEncoder from a local folder.

    Recipe: ``{kind: cross_encoder, model_path: /models/my-distilled-reranker}``.
    """

    def scores(self, pairs: list[list[str]], ctx: Context) -> Any:
        model = cross_encoder("cross_encoder", self.model_path, ctx, self.device)
        return model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
