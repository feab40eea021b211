"""What a stage's context is made of below the protocols: the model store a heavy model is
loaded through (once a key, lazily), the lock around heavy imports, and the errors of a stage
that needs a resource its context lacks. The context itself is a Protocol
(:class:`chainrag.protocols.context.Context`), which :class:`chainrag.context.StageContext`
implements.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from chainrag.core.errors import ChainragError
from chainrag.core.types import EncoderUsage

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

    def __init__(self, spacy_workers: int = 0) -> None:
        self.spacy_workers = spacy_workers
        """The spaCy worker processes a run placed for the stages that leave theirs unset:
        :func:`chainrag.run.session.spacy_placement` (0: none, spaCy stays in the process);
        :mod:`~chainrag.components.index.spacy_workers`."""
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
