"""Protocols of the retrieval stages: what is searched, seeds, reranking, expansion, judging."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from chainrag.core.types import Chunk, Expansion, FloatArray, Hit, Sentence, Verdict

if TYPE_CHECKING:
    from chainrag.core.context import Context
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


@runtime_checkable
class Reranker(Protocol):
    """Re-scores candidate hits against a query; returns them best first."""

    def __call__(
        self, query: str, hits: Sequence[Hit], texts: Sequence[str], ctx: Context
    ) -> tuple[Hit, ...]: ...


@runtime_checkable
class SeedRetriever(Protocol):
    """A (sub-)question → the top-k seed units of an index (ChainRAG §3.2 step 1)."""

    def __call__(self, query: str, index: Searchable, ctx: Context) -> tuple[Hit, ...]: ...


@runtime_checkable
class SufficiencyJudge(Protocol):
    """Do these texts suffice to answer the question? (LLM yes/no, §3.2)."""

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict: ...


@runtime_checkable
class Expander(Protocol):
    """Seeds → the units gathered by walking the graph under a word budget (§3.2 step 2)."""

    def __call__(
        self, question: str, seeds: Sequence[Hit], graph: Graph, ctx: Context
    ) -> Expansion: ...


@runtime_checkable
class Retrieval(Protocol):
    """The recipe's retrieval stages as a method's context holds them
    (``Context.retrieval``; a :class:`~chainrag.recipes.recipe.RetrievalSpec`): seeds, then an
    expansion where the index is a graph. :meth:`chainrag.core.context.Context.retrieve` runs
    them."""

    @property
    def seed(self) -> SeedRetriever: ...

    @property
    def expander(self) -> Expander | None: ...
