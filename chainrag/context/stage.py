"""The explicit context passed to stages that need something from outside (no globals).

A stage that calls the LLM or loads a model takes ``ctx``, typed by the narrowest Protocol that
serves it (:class:`~chainrag.protocols.resources.Resources`,
:class:`~chainrag.protocols.context.Context`); a pure stage takes none. Tests build a
:class:`StageContext` around a scripted fake LLM; a run builds one around the real backend.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from chainrag.context.retriever import Retriever
from chainrag.core.context import EncoderLedger, MissingResourceError, ModelStore
from chainrag.core.retrieval import IndexData
from chainrag.core.types import Expansion, Usage
from chainrag.protocols.llm import LLM, UsageLedger
from chainrag.protocols.retrieval import Retrieval
from chainrag.protocols.units import Searchable


@attrs.define
class StageContext:
    """What stages may use beyond their inputs: the one object a run gives a stage, which is
    both a :class:`~chainrag.protocols.resources.Resources` and a
    :class:`~chainrag.protocols.context.Context`.

    Attributes:
        llm: The LLM backend, or None for runs that make no LLM call.
        models: The lazily filled model store.
        index: The index built for the current question or corpus: a ``Searchable`` (chunks),
            or a ``Graph`` (a sentence graph's view, a corpus index) that expanders walk.
        retrieval: The recipe's ``retrieval:`` section (seed retriever, expander), which
            :meth:`retrieve` runs on ``index``.
        ledger: Where ``llm`` counts its usage (the runner's per-question ``MeteredLLM``), or
            None when nothing counts it; :meth:`usage` reads it.
        index_data: What retrieval derives from an index (BM25, vector indexes), per index
            and bounded (:class:`~chainrag.core.retrieval.IndexData`); shared by copies.
        encoders: Where remote encoders count their requests, tokens and searches (the
            runner's per-question ledger), or None when nothing counts them.
    """

    llm: LLM | None = None
    models: ModelStore = attrs.field(factory=ModelStore)
    index: Searchable | None = None
    retrieval: Retrieval | None = None
    ledger: UsageLedger | None = None
    index_data: IndexData = attrs.field(factory=IndexData)
    encoders: EncoderLedger | None = None

    def require_llm(self, stage: str) -> LLM:
        """The LLM, or a clear error naming the stage that needed one."""
        if self.llm is None:
            raise MissingResourceError(
                f"{stage} needs an LLM, but this context has none (set the recipe's llm:)"
            )
        return self.llm

    def require_index(self) -> Searchable:
        """The index, or a clear error: methods need one (the runner sets it)."""
        if self.index is None:
            raise MissingResourceError("a method needs ctx.index (the runner sets it)")
        return self.index

    def retriever(self) -> Retriever:
        """The recipe's retrieval bound to the index (a
        :class:`~chainrag.core.retrieval.Retriever`)."""
        index = self.require_index()
        if self.retrieval is None:
            raise MissingResourceError("a method needs ctx.retrieval (the runner sets it)")
        return Retriever(self.retrieval, index)

    def retrieve(self, query: str) -> Expansion:
        """What :meth:`retriever` finds for ``query``: seeds, expanded over the graph where the
        recipe has an expander."""
        return self.retriever()(query, self)

    def texts(self, units: Sequence[int]) -> list[str]:
        """The texts of ``units`` of the index."""
        texts = self.require_index().texts
        return [texts[u] for u in units]

    def usage(self) -> Usage:
        """The LLM usage counted so far (zero when nothing counts it)."""
        return self.ledger.total() if self.ledger is not None else Usage()
