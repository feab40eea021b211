"""Protocols of the retrieval stages: seeds, reranking, expansion, judging, and a recipe's
retrieval (what they search is :mod:`chainrag.protocols.units`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from chainrag.core.types import Expansion, Hit, Verdict

if TYPE_CHECKING:
    from chainrag.protocols.context import Context
    from chainrag.protocols.units import Graph, Searchable


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
    expansion where the index is a graph. :meth:`chainrag.context.StageContext.retrieve` runs
    them."""

    @property
    def seed(self) -> SeedRetriever: ...

    @property
    def expander(self) -> Expander | None: ...
