"""The LLM protocol: every model call in chainrag goes through an object like this."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chainrag.core.types import LLMRequest, LLMResponse, Usage


@runtime_checkable
class LLM(Protocol):
    """Completes typed requests; failures raise, never return a made-up answer string."""

    def complete(self, request: LLMRequest) -> LLMResponse: ...


@runtime_checkable
class UsageLedger(Protocol):
    """Where a metered LLM counts its usage (the runner's per-question ledger): what a
    context reads of it."""

    def total(self) -> Usage: ...


@runtime_checkable
class IdentifiedLLM(Protocol):
    """An LLM that says what answers its requests: the endpoint (a local model file's hash, a
    provider's model string) with the model and sampling the requests are bound to, or None
    where it cannot say. A stage that stores what the LLM extracted (HippoRAG's OpenIE) keys
    its store on it, so another model never serves a stale extraction."""

    def identity(self) -> str | None: ...
