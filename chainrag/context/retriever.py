"""Retrieval as its own object: a recipe's retrieval stages bound to one index.

:class:`Retriever` runs seeds, then the expander over the index's graph. An expander over an
index that is not a graph is an error (a recipe refuses it when it loads; a context put
together in code gets the error at the first query), never skipped without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs

from chainrag.core.budget import words
from chainrag.core.errors import ChainragError
from chainrag.core.types import Expansion, Hit
from chainrag.protocols.retrieval import Retrieval
from chainrag.protocols.units import Graph, Searchable

if TYPE_CHECKING:
    from chainrag.protocols.context import Context

T = TypeVar("T")


class RetrievalError(ChainragError, ValueError):
    """Retrieval stages that cannot run on the index they were given."""


@attrs.frozen
class Retriever:
    """A recipe's retrieval (seed retriever, optional expander) bound to one index."""

    spec: Retrieval
    index: Searchable

    def __call__(self, query: str, ctx: Context) -> Expansion:
        """Seeds for ``query``, expanded over the graph where the recipe has an expander."""
        return self.expand(query, self.spec.seed(query, self.index, ctx), ctx)

    def seeds(self, query: str, ctx: Context) -> tuple[Hit, ...]:
        """The seed retriever's hits for ``query``, not expanded."""
        return tuple(self.spec.seed(query, self.index, ctx))

    def seed_part(self, part: type[T]) -> T | None:
        """The seed retriever as ``part`` (a runtime-checkable Protocol of an optional part),
        None where it is not one."""
        seed = self.spec.seed
        return seed if isinstance(seed, part) else None

    def expand(self, query: str, seeds: Sequence[Hit], ctx: Context) -> Expansion:
        """``seeds`` (this retrieval's seeds for ``query``) expanded over the graph where the
        recipe has an expander: what :meth:`__call__` returns, for a caller that walks the
        same seeds with more than one expander."""
        expander = self.spec.expander
        if expander is not None:
            if not isinstance(self.index, Graph):
                raise RetrievalError(
                    f"the retrieval has an expander ({type(expander).__name__}), which walks a "
                    f"graph, but the index is a {type(self.index).__name__}, which has none"
                )
            return expander(query, seeds, self.index, ctx)
        units = tuple(h.index for h in seeds)
        texts = self.index.texts
        return Expansion(units, units, 0, (), sum(words(texts[u]) for u in units))
