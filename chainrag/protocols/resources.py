"""What an index-time stage may reach beyond its inputs, as a Protocol: the model store, the LLM
and where remote encoders count their usage (:class:`Resources`); a query-time stage is given
more
(:class:`chainrag.protocols.context.Context`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chainrag.core.context import EncoderLedger, ModelStore
from chainrag.protocols.llm import LLM


@runtime_checkable
class Resources(Protocol):
    """The model store, the LLM and the remote encoders' ledger: what an index-time stage
    (splitting, NER, embedding) may reach beyond its inputs."""

    @property
    def models(self) -> ModelStore:
        """The lazily filled model store: a heavy model is loaded through it, once a key."""
        ...

    @property
    def encoders(self) -> EncoderLedger | None:
        """Where remote encoders count their requests, tokens and searches; None when nothing
        counts them."""
        ...

    def require_llm(self, stage: str) -> LLM:
        """The LLM, or an error naming ``stage``, which needed one."""
        ...
