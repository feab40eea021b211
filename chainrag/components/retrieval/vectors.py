"""The vectors a retrieval stage needs, taken from the index wherever it holds them.

A question's index already holds the vector of every unit, computed by the embedder the
retrievers, rerankers and judges use: :func:`text_vectors` looks a text up among the index's
units (a text → row map made once per index) and embeds only the texts that are not units.
A query is embedded once per index too (:func:`query_vector`): the seed retriever, a dense
reranker and a similarity judge asking about the same question share its vector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from chainrag.core.types import FloatArray
from chainrag.protocols.context import Context
from chainrag.protocols.units import Searchable


def text_vectors(index: Searchable, texts: Sequence[str], ctx: Context) -> FloatArray:
    """The embeddings of ``texts``: the index's own where a text is one of its units, the
    index embedder's (as passages) for the others."""
    rows = ctx.index_data.get(
        index, "rows by text", lambda: {text: i for i, text in enumerate(index.texts)}
    )
    found = [rows.get(text) for text in texts]
    missing = [text for text, row in zip(texts, found, strict=True) if row is None]
    fresh = iter(index.embedder(missing, ctx, "passage")) if missing else iter(())
    vectors = index.embeddings
    return np.stack([vectors[row] if row is not None else next(fresh) for row in found])


def query_vector(index: Searchable, query: str, ctx: Context) -> FloatArray:
    """``query``'s vector by the index's embedder (role ``query``), (1, d); embedded once per
    index and query while the index's data is kept (``ctx.index_data``)."""
    made: FloatArray = ctx.index_data.get(
        index, ("query vector", query), lambda: index.embedder([query], ctx, "query")
    )
    return made
