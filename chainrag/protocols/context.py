"""What a query-time stage or a method may reach beyond its inputs, as a Protocol
(:class:`Context`): the resources an index-time stage has (the model store, the LLM), and the
index built for the question (or the corpus), what retrieval derives from it, the recipe's
retrieval run on it, the LLM usage counted so far. A run gives one object that is both
(:class:`chainrag.context.StageContext`); a stage names the narrowest that serves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar, runtime_checkable

from chainrag.core.retrieval import IndexData
from chainrag.core.types import Expansion, Hit, Usage
from chainrag.protocols.resources import Resources
from chainrag.protocols.units import Searchable

T = TypeVar("T")


@runtime_checkable
class BoundRetrieval(Protocol):
    """A recipe's retrieval bound to one index (what :meth:`Context.retriever` gives: a
    :class:`chainrag.context.Retriever`), for a method that takes its stages apart (IRCoT
    merges each step's seeds itself)."""

    @property
    def index(self) -> Searchable:
        """The index it searches."""
        ...

    def seeds(self, query: str, ctx: Context) -> tuple[Hit, ...]:
        """The seed retriever's hits for ``query``, not expanded."""
        ...

    def seed_part(self, part: type[T]) -> T | None:
        """The seed retriever as ``part`` (a runtime-checkable Protocol of an optional part),
        None where it is not one."""
        ...

    def __call__(self, query: str, ctx: Context) -> Expansion:
        """Seeds for ``query``, expanded where the recipe has an expander."""
        ...


@runtime_checkable
class Context(Resources, Protocol):
    """The resources, and the index with what is derived from it, retrieval on it and the LLM
    usage counted (see the module docstring)."""

    @property
    def index(self) -> Searchable | None:
        """The index, None before the runner sets it."""
        ...

    @property
    def index_data(self) -> IndexData:
        """What retrieval derives from an index (a BM25 index, vector indexes), per index."""
        ...

    def require_index(self) -> Searchable:
        """The index, or an error: a method needs one."""
        ...

    def retriever(self) -> BoundRetrieval:
        """The recipe's retrieval bound to the index, or an error: a method needs both."""
        ...

    def retrieve(self, query: str) -> Expansion:
        """The recipe's retrieval on the index for ``query``: seeds, expanded where it has an
        expander."""
        ...

    def texts(self, units: Sequence[int]) -> list[str]:
        """The texts of ``units`` of the index."""
        ...

    def usage(self) -> Usage:
        """The LLM usage counted so far (zero when nothing counts it)."""
        ...
