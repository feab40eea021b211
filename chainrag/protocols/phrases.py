"""Protocols of HippoRAG's stages (Gutiérrez et al. 2024): OpenIE, the phrase graph, query
linking, the graph's ranking of phrases; and the optional part of a retriever that builds one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from chainrag.core.phrase_graph import Extraction, Linking, PhraseGraph
from chainrag.core.types import PhraseGraphStats

if TYPE_CHECKING:
    from chainrag.protocols.context import Context
    from chainrag.protocols.index import Embedder
    from chainrag.protocols.units import Searchable


@runtime_checkable
class OpenIE(Protocol):
    """Passage texts → each passage's named entities and triples, aligned with the input (§3.1
    offline indexing); a passage's extraction depends on its text only."""

    def __call__(self, texts: Sequence[str], ctx: Context) -> tuple[Extraction, ...]: ...


@runtime_checkable
class PhraseGraphBuilder(Protocol):
    """Extractions of n passages → the phrase graph over them: triple edges, synonymy edges
    by the embedder's cosine, the passage × phrase counts (§3.1)."""

    def __call__(
        self, extractions: Sequence[Extraction], embedder: Embedder, ctx: Context
    ) -> PhraseGraph: ...


@runtime_checkable
class EntityLinker(Protocol):
    """A query → its named entities, each linked to its nearest phrase of the graph, and the
    reset weights they give the graph's walk (§3.2 online retrieval)."""

    def __call__(
        self, query: str, graph: PhraseGraph, embedder: Embedder, ctx: Context
    ) -> Linking: ...


@runtime_checkable
class PhraseRanker(Protocol):
    """A phrase graph and reset weights (not all zero) → a probability per phrase (§3.2:
    Personalized PageRank)."""

    def __call__(self, graph: PhraseGraph, reset: NDArray[np.float64]) -> NDArray[np.float64]: ...


@runtime_checkable
class BuildsPhraseGraph(Protocol):
    """A seed retriever that builds a phrase graph over the index it searches (HippoRAG's):
    a method may record what the graph was built from."""

    def graph_stats(self, index: Searchable, ctx: Context) -> PhraseGraphStats: ...
