"""Protocols of the index stages: splitting, chunking, NER, key entities, edges, embedding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from chainrag.types import Chunk, FloatArray, Mention, Passage, ScoredEntity, Sentence

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

    from chainrag.context import Context
    from chainrag.types import GraphInputs

EmbedRole = Literal["query", "passage"]


@runtime_checkable
class SentenceSplitter(Protocol):
    """Passages → sentences with provenance (ChainRAG §3.1: nodes are sentences)."""

    def __call__(self, passages: Sequence[Passage], ctx: Context) -> tuple[Sentence, ...]: ...


@runtime_checkable
class Chunker(Protocol):
    """Passages → fixed-size chunks (NaiveRAG's index and the "w/o Graph" ablation)."""

    def __call__(self, passages: Sequence[Passage]) -> tuple[Chunk, ...]: ...


@runtime_checkable
class NER(Protocol):
    """Texts → the named-entity mentions of each text, aligned with the input."""

    def __call__(self, texts: Sequence[str], ctx: Context) -> tuple[tuple[Mention, ...], ...]: ...


@runtime_checkable
class KeyEntityScorer(Protocol):
    """Per-sentence entity names → per-sentence key entities with importance scores.

    ChainRAG keeps the top α% of a sentence's entities by BM25 importance (§3.1).
    """

    def __call__(
        self, entities: Sequence[Sequence[str]]
    ) -> tuple[tuple[ScoredEntity, ...], ...]: ...


@runtime_checkable
class EdgeBuilder(Protocol):
    """Graph inputs → one n×n symmetric, non-negative, zero-diagonal CSR float32 matrix."""

    def __call__(self, inputs: GraphInputs) -> csr_matrix: ...


@runtime_checkable
class Embedder(Protocol):
    """Texts → an (n, d) float32 matrix of L2-normalised embeddings.

    ``role`` distinguishes queries from passages (query instructions, asymmetric adapters).
    """

    def __call__(
        self, texts: Sequence[str], ctx: Context, role: EmbedRole = "passage"
    ) -> FloatArray: ...
