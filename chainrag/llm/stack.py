"""Layers around a backend: fill in the recipe's model and sampling, and count usage.

A run's LLM is ``BoundLLM(CachedLLM(LiteLLMBackend(...)))``, shared by every question; each
question wraps it in its own ``MeteredLLM(shared, Ledger())`` so its calls, cache hits, tokens,
latency and cost are counted per prompt id and returned with its answer.
"""

from __future__ import annotations

import threading

import attrs

from chainrag.core.types import LLMRequest, LLMResponse, Usage
from chainrag.protocols.llm import LLM, IdentifiedLLM


class Ledger:
    """Usage per prompt id; safe to share between threads and coroutines."""

    def __init__(self) -> None:
        self._by_prompt: dict[str, Usage] = {}
        self._lock = threading.Lock()

    def record(self, prompt_id: str, usage: Usage) -> None:
        with self._lock:
            self._by_prompt[prompt_id] = self._by_prompt.get(prompt_id, Usage()) + usage

    def by_prompt(self) -> dict[str, Usage]:
        with self._lock:
            return dict(sorted(self._by_prompt.items()))

    def total(self) -> Usage:
        total = Usage()
        for usage in self.by_prompt().values():
            total = total + usage
        return total


@attrs.define
class MeteredLLM:
    """Records the usage of every response (calls and cache hits alike) in ``ledger``."""

    inner: LLM
    ledger: Ledger = attrs.field(factory=Ledger)

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.inner.complete(request)
        self.ledger.record(request.prompt_id, response.usage)
        return response

    def identity(self) -> str | None:
        """The identity of the LLM it meters (None where that one says none)."""
        return self.inner.identity() if isinstance(self.inner, IdentifiedLLM) else None


@attrs.define
class BoundLLM:
    """Fills a request's unset model and sampling parameters from the recipe's ``llm:``.
    ``endpoint`` is what answers (:func:`chainrag.llm.endpoint_identity`), "" where unknown."""

    inner: LLM
    model: str
    temperature: float
    max_tokens: int
    seed: int | None
    endpoint: str = ""

    def identity(self) -> str | None:
        """The endpoint with the model and sampling a request is bound to (None without an
        endpoint)."""
        if not self.endpoint:
            return None
        bound = (self.endpoint, self.model, self.temperature, self.max_tokens, self.seed)
        return "|".join(map(str, bound))

    def bind(self, request: LLMRequest) -> LLMRequest:
        return attrs.evolve(
            request,
            model=request.model or self.model,
            temperature=self.temperature if request.temperature is None else request.temperature,
            max_tokens=self.max_tokens if request.max_tokens is None else request.max_tokens,
            seed=self.seed if request.seed is None else request.seed,
        )

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.inner.complete(self.bind(request))


@attrs.define
class LimitedLLM:
    """At most ``slots`` requests of this LLM in flight at once, across threads.

    :func:`chainrag.llm.open_llm` puts it between the response cache and the backend, so only
    live requests take a slot: a cached answer never waits behind one."""

    inner: LLM
    slots: threading.BoundedSemaphore

    @classmethod
    def at_most(cls, inner: LLM, n: int) -> LimitedLLM:
        return cls(inner, threading.BoundedSemaphore(n))

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self.slots:
            return self.inner.complete(request)
