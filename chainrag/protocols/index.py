"""Protocols of the index stages: splitting, chunking, NER, key entities, edges, embedding,
vector search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from chainrag.core.types import Chunk, FloatArray, Mention, Passage, ScoredEntity, Sentence

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    from numpy.typing import NDArray
    from scipy.sparse import csr_matrix

    from chainrag.core.types import GraphInputs
    from chainrag.protocols.resources import Resources

EmbedRole = Literal["query", "passage"]


@runtime_checkable
class SentenceSplitter(Protocol):
    """Passages → sentences with provenance (ChainRAG §3.1: nodes are sentences).

    A passage's sentences depend on its text only (not its title or neighbours): an index
    build splits each distinct passage text once (:mod:`chainrag.index.stores`)."""

    def __call__(self, passages: Sequence[Passage], ctx: Resources) -> tuple[Sentence, ...]: ...


@runtime_checkable
class Chunker(Protocol):
    """Passages → fixed-size chunks (NaiveRAG's index and the "w/o Graph" ablation)."""

    def __call__(self, passages: Sequence[Passage]) -> tuple[Chunk, ...]: ...


@runtime_checkable
class NER(Protocol):
    """Texts → the named-entity mentions of each text, aligned with the input; a text's
    mentions depend on that text only (each distinct text is tagged once)."""

    def __call__(self, texts: Sequence[str], ctx: Resources) -> tuple[tuple[Mention, ...], ...]: ...


@runtime_checkable
class VersionedModel(Protocol):
    """A stage whose output depends on an installed model's version (a spaCy pipeline): the
    stores of its per-text output (:mod:`chainrag.index.stores`) key on it."""

    def model_version(self) -> str: ...


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
        self, texts: Sequence[str], ctx: Resources, role: EmbedRole = "passage"
    ) -> FloatArray: ...


@runtime_checkable
class StoresItsVectors(Protocol):
    """An embedder that keeps its vectors in the text store itself, under its endpoint's
    identity (a remote model: each vector paid for once, queries too); an index build's
    embedding cache hands it its texts as they are (:mod:`chainrag.index.stores`)."""

    def vector_space(self, role: EmbedRole) -> str:
        """The store's space of this embedder's vectors in ``role``."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """A built inner-product index over n vectors, searched by (q, d) float32 queries."""

    def search(
        self, queries: FloatArray, k: int, exclude: NDArray[np.int64] | None = None
    ) -> tuple[NDArray[np.int64], FloatArray]:
        """(ids, similarities), each (q, k): best first, equal similarities by lower id, padded
        with id -1 and similarity -inf where fewer than k exist; ``exclude[i]`` (one id per
        query) is never returned for query i."""
        ...

    def self_join(self, k: int, rows: int) -> tuple[NDArray[np.int64], FloatArray]:
        """Each indexed vector's ``k`` most similar other indexed vectors, (n, k) as
        :meth:`search` gives them (the SS layer, §3.1); ``rows`` of them searched at a time
        where the index searches in query blocks."""
        ...

    def save(self, path: Path) -> None:
        """Write the index to a file at ``path``: its vectors are not written, except where
        the index keeps a copy of them in its own order (``blocked_ivf``), in a file beside it
        named ``path``'s name plus a suffix, written first; a caller moving the file moves
        those with it."""
        ...


@runtime_checkable
class VectorSearch(Protocol):
    """(n, d) L2-normalised vectors → a :class:`VectorIndex` (SS edges §3.1, seeds §3.2).

    ``vectors`` may be a read-only ``np.memmap``, float32 or float16; the index may keep a
    reference to it. ``load`` reopens what :meth:`VectorIndex.save` wrote, over the same vectors.
    """

    def __call__(self, vectors: FloatArray) -> VectorIndex: ...

    def load(self, path: Path, vectors: FloatArray) -> VectorIndex: ...
