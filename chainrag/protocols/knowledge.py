"""Protocols of Shi et al.'s modules: Query Rewriter+, the knowledge filter, the cache trigger."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from chainrag.core.types import KnowledgeItem, QueryPlan, ReservoirMatch

if TYPE_CHECKING:
    from chainrag.protocols.context import Context


@runtime_checkable
class QueryRewriter(Protocol):
    """One LLM call → clarified questions and several search queries (Query Rewriter+)."""

    def __call__(self, question: str, ctx: Context) -> QueryPlan: ...


@runtime_checkable
class KnowledgeFilter(Protocol):
    """Keeps the retrieved items that help answer the question, in their order: Shi et al.'s
    NLI filter (entailment), LongRAG's CoT-guided filter (Zhao et al., 2024: cited)."""

    def __call__(
        self, question: str, items: Sequence[KnowledgeItem], ctx: Context
    ) -> tuple[KnowledgeItem, ...]: ...


@runtime_checkable
class CacheTrigger(Protocol):
    """Given the reservoir's best matches for a query: answer from memory (True) or retrieve?

    When it answers from memory, the matched items of similarity ≥ ``threshold`` are the
    query's knowledge.
    """

    @property
    def threshold(self) -> float:
        """The least cosine of a stored item served from memory."""
        ...

    def __call__(self, match: ReservoirMatch) -> bool: ...
