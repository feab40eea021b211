"""Is the LLM there at all? Asked before the first live request, so that a missing key, a model
litellm cannot route, an endpoint that refuses the connection or a refused key stops a run at
once with the provider's message, instead of failing every question five times.

Two checks, in order:

* **credentials** — the environment variables litellm says the model needs
  (:func:`~chainrag.recipes.providers.missing_credentials`); no call;
* **the endpoint** — one request of one token (:data:`PROBE`), sent past the response cache and
  every ledger (not cached, not counted in a run's usage), with no retry.

A failure is an :class:`~chainrag.core.errors.LLMUnavailableError`, which stops a run (a
:class:`~chainrag.core.errors.RunStopError`): nothing is recorded for the questions it stopped,
so the same command resumes them once the cause is fixed. A probe that gets a 429 passes (the
endpoint answered and took the key); one that gets a 5xx, a timeout or an unreadable body passes
too, and the run's own retries deal with such trouble. :class:`CheckedLLM` runs the checks before
the first live request of a run; ``chainrag run`` runs them earlier still, before the first
question, where a live request is certain (:func:`chainrag.llm.check_llm`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import attrs

from chainrag.core.errors import (
    LLMConnectionError,
    LLMError,
    LLMRequestError,
    LLMUnavailableError,
)
from chainrag.core.types import LLMRequest, LLMResponse, Message
from chainrag.protocols.llm import LLM
from chainrag.recipes.providers import missing_credentials, unknown_model
from chainrag.recipes.recipe import LLMSpec

PROBE = (Message("user", "Reply with the word OK."),)
"""The probe's conversation: one token of answer is enough."""


def credentials_problem(spec: LLMSpec) -> str | None:
    """What the environment lacks for ``spec``'s model (the variables, by name: the one
    ``llm.api_key_env`` names, else those litellm says the model needs); None where nothing is
    missing, and for a model on the managed local server without ``api_key_env``."""
    if spec.api_key_env is not None:  # the key is where the recipe says, for any kind
        if os.environ.get(spec.api_key_env):
            return None
        return (f"{spec.model} needs its key in {spec.api_key_env} (llm.api_key_env), and it "
                "is not set (chainrag never stores it)")  # fmt: skip
    if spec.kind != "litellm":
        return None
    missing = missing_credentials(spec.model, spec.api_base)
    if not missing:
        return None
    names = ", ".join(missing)
    return (f"{spec.model} needs {names} in the environment, and it is not set (litellm reads "
            f"the key from there; chainrag never stores it)")  # fmt: skip


def model_problem(spec: LLMSpec) -> str | None:
    """Why litellm cannot route ``spec``'s model; None where it can."""
    if spec.kind != "litellm":
        return None
    reason = unknown_model(spec.model)
    return f"litellm cannot send requests for {spec.model}: {reason}" if reason else None


def probe_request(model: str) -> LLMRequest:
    """The one-token request that proves ``model``'s endpoint answers."""
    return LLMRequest(PROBE, prompt_id="preflight", model=model, temperature=0.0, max_tokens=1)


def probe(backend: LLM, model: str) -> None:
    """Send :func:`probe_request` to ``backend`` (retries are the backend's: give it none);
    raise :class:`LLMUnavailableError` with the provider's message where the connection or the
    request is refused."""
    try:
        backend.complete(probe_request(model))
    except (LLMConnectionError, LLMRequestError) as exc:
        raise LLMUnavailableError(f"{model} did not answer a one-token request: {exc}") from exc
    except LLMError:
        return  # 429, 5xx, timeouts: the endpoint is there; the run's retries take over


def check_spec(spec: LLMSpec) -> None:
    """The checks that make no call: the model is one litellm routes, and its credentials are
    set; raise :class:`LLMUnavailableError` naming what is wrong."""
    for problem in (model_problem(spec), credentials_problem(spec)):
        if problem is not None:
            raise LLMUnavailableError(problem)


@attrs.define
class CheckedLLM:
    """Runs ``check`` before the first request that reaches it (below the response cache: the
    first live one), once; where it fails, that request and every later one raise its
    :class:`LLMUnavailableError`, which stops the run."""

    inner: LLM
    check: Callable[[str], None]
    """The checks, given the first request's model; raises LLMUnavailableError."""
    _done: bool = attrs.field(init=False, default=False)
    _failed: LLMUnavailableError | None = attrs.field(init=False, default=None)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            if not self._done:
                try:
                    self.check(request.model)
                except LLMUnavailableError as exc:
                    self._failed = exc
                self._done = True
        if self._failed is not None:
            raise self._failed
        return self.inner.complete(request)
