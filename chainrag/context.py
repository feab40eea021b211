"""The explicit context passed to stages that need something from outside (no globals).

A stage that calls the LLM or loads a model takes ``ctx: Context``; a pure stage does not.
Tests build a context around a scripted fake LLM; a run builds one around the real backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import attrs

from chainrag.errors import ChainragError
from chainrag.protocols.llm import LLM

T = TypeVar("T")


class ModelStore:
    """Loads each heavy model once per key (e.g. loader name + model path), lazily.

    Components never load models at import or construction; they ask the store when first
    called, so one process shares one copy of each model across components and questions.
    """

    def __init__(self) -> None:
        self._models: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The model stored under ``key``, loading it with ``load()`` the first time."""
        with self._lock:
            if key not in self._models:
                self._models[key] = load()
            model: T = self._models[key]
            return model

    def __len__(self) -> int:
        return len(self._models)

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelStore:
        """A model store is shared, never copied: copies of a context share its models."""
        return self


class MissingResourceError(ChainragError):
    """A stage needs something (an LLM, an index) that the context was not given."""


@attrs.define
class Context:
    """What stages may use beyond their inputs.

    Attributes:
        llm: The LLM backend, or None for runs that make no LLM call.
        models: The lazily filled model store.
        index: The index built for the current question or corpus (a ``Searchable``; a
            ``Graph`` view for the sentence graph).
        retrieval: The recipe's ``retrieval:`` section (seed retriever, expander), which the
            methods use on ``index``.
    """

    llm: LLM | None = None
    models: ModelStore = attrs.field(factory=ModelStore)
    index: Any = None
    retrieval: Any = None

    def require_llm(self, stage: str) -> LLM:
        """The LLM, or a clear error naming the stage that needed one."""
        if self.llm is None:
            raise MissingResourceError(
                f"{stage} needs an LLM, but this context has none (set the recipe's llm:)"
            )
        return self.llm
