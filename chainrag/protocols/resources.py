"""What an index-time stage may reach beyond its inputs, as a Protocol: the model store and the
LLM (:class:`Resources`); a query-time stage is given more
(:class:`chainrag.protocols.context.Context`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chainrag.core.context import ModelStore
from chainrag.protocols.llm import LLM


@runtime_checkable
class Resources(Protocol):
    """The model store and the LLM: what an index-time stage (splitting, NER, embedding) may
    reach beyond its inputs."""

    @property
    def models(self) -> ModelStore:
        """The lazily filled model store: a heavy model is loaded through it, once a key."""
        ...

    def require_llm(self, stage: str) -> LLM:
        """The LLM, or an error naming ``stage``, which needed one."""
        ...
