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
