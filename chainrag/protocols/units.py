"""What an index is to a query, as Protocols: its units' texts and embeddings and the embedder
that made them (:class:`Searchable`), a graph over them (:class:`Graph`), units that are
sentences or chunks, vector indexes it keeps itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from chainrag.core.types import Chunk, FloatArray, Sentence

if TYPE_CHECKING:
    from chainrag.protocols.index import Embedder, VectorIndex, VectorSearch


@runtime_checkable
class Searchable(Protocol):
    """A built index as retrieval sees it: unit texts, their embeddings, the embedder used."""

    @property
    def texts(self) -> Sequence[str]: ...

    @property
    def embeddings(self) -> FloatArray: ...

    @property
    def embedder(self) -> Embedder: ...


@runtime_checkable
class Graph(Searchable, Protocol):
    """A searchable index with a graph over its units (the sentence graph): a question's
    :class:`~chainrag.index.graph.GraphView`, a corpus's
    :class:`~chainrag.index.corpus.store.CorpusIndex`.
    """

    def neighbours(self, units: Sequence[int]) -> tuple[int, ...]:
        """Units one hop away from ``units`` (not including them), in a deterministic order."""
        ...


@runtime_checkable
class Sentenced(Searchable, Protocol):
    """A searchable index whose units are sentences with their provenance (passage, title,
    position): a question's sentence graph and its view, a corpus index."""

    @property
    def sentences(self) -> Sequence[Sentence]: ...


@runtime_checkable
class Chunked(Searchable, Protocol):
    """A searchable index whose units are word chunks with their provenance (NaiveRAG's
    index, the "w/o Graph" ablation)."""

    @property
    def chunks(self) -> Sequence[Chunk]: ...


@runtime_checkable
class KeepsVectorIndexes(Protocol):
    """An index that keeps its own vector indexes (a corpus index: on disk, built once per
    search); retrieval asks it for one instead of building one over its embeddings."""

    def vector_index(self, search: VectorSearch) -> VectorIndex: ...
