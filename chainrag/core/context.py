"""The explicit context passed to stages that need something from outside (no globals).

A stage that calls the LLM or loads a model takes ``ctx: Context``; a pure stage does not.
Tests build a context around a scripted fake LLM; a run builds one around the real backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.retrieval import IndexData, Retriever
from chainrag.core.types import EncoderUsage, Expansion, Usage
from chainrag.protocols.llm import LLM, UsageLedger
from chainrag.protocols.retrieval import Retrieval, Searchable

T = TypeVar("T")


IMPORTS = threading.RLock()
"""Held by a model loader around a heavy library's imports and its ``from_pretrained`` (which
imports the model's modules lazily), whatever store or key asks: transformers' lazy modules are
not safe to import from several threads at once, and two loaders with different keys (an
embedder and a reranker) would otherwise import together. Re-entrant. A loader that imports
nothing heavy does not take it, so its slow load holds up no other model."""


class ModelStore:
    """Loads each heavy model once per key (e.g. loader name + model path), lazily.

    Components never load models at import or construction; they ask the store when first
    called, so one process shares one copy of each model across components and questions. A
    run makes one store and every question shares it, empty or not: a store is never falsy
    (pass it on with ``is None`` checks).
    """

    def __init__(self) -> None:
        self._models: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self._loading: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The model stored under ``key``, loading it with ``load()`` the first time. A load
        holds only its key's lock: another model is found, or loaded, meanwhile."""
        with self._lock:
            if key in self._models:
                found: T = self._models[key]
                return found
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                if key in self._models:
                    done: T = self._models[key]
                    return done
            model = load()
            with self._lock:
                self._models[key] = model
                self._loading.pop(key, None)
            return model

    def __len__(self) -> int:
        """How many models are loaded."""
        return len(self._models)

    def __bool__(self) -> bool:
        """Always true, empty or not: ``models or ModelStore()`` gave each question of a run a
        private store while nothing was loaded yet, so that several loaded one model at once."""
        return True

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelStore:
        """A model store is shared, never copied: copies of a context share its models."""
        return self


class EncoderLedger:
    """The remote encoders' usage (:class:`~chainrag.core.types.EncoderUsage`) by stage, as a
    question's index build and retrieval record it; safe to share between threads."""

    def __init__(self) -> None:
        self._by_stage: dict[str, EncoderUsage] = {}
        self._lock = threading.Lock()

    def record(self, stage: str, usage: EncoderUsage) -> None:
        with self._lock:
            self._by_stage[stage] = self._by_stage.get(stage, EncoderUsage()) + usage

    def by_stage(self) -> tuple[tuple[str, EncoderUsage], ...]:
        with self._lock:
            return tuple(sorted(self._by_stage.items()))


class MissingResourceError(ChainragError):
    """A stage needs something (an LLM, an index) that the context was not given."""


class ModelPathError(MissingResourceError, ValueError):
    """A component's model path names nothing on this machine. It is checked when the model is
    loaded, never when a recipe is validated, so a recipe naming a model validates anywhere."""


def model_folder(owner: str, field: str, value: str) -> str:
    """``value``, the local model path in ``owner``'s ``field``, when something is there; else a
    :class:`ModelPathError` naming the component, the field and the path. Call it in the loader
    of the model, so the error comes when the model is needed."""
    if not Path(value).exists():
        raise ModelPathError(
            f"{owner}: '{field}' {value!r} does not exist (a local model folder is needed)"
        )
    return value


@attrs.define
class Context:
    """What stages may use beyond their inputs.

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
