"""The litellm backend: any litellm model string, with our own retries and typed failures.

Retries (exponential backoff with jitter) cover rate limits, timeouts, connection failures,
5xx answers and malformed bodies; anything else (a bad request, a wrong key) fails at once.
After the last attempt the caller gets a typed :class:`~chainrag.core.errors.LLMError`, never a
made-up answer. API keys are litellm's business (read from the environment); this module never
sees, logs or stores one, and masks every credential it can see out of error messages
(:func:`chainrag.core.credentials.redact`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import random
import re
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import attrs

from chainrag.core.credentials import redact
from chainrag.core.errors import (
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnsupportedError,
    LocalTimeoutError,
    ServerDiedError,
)
from chainrag.core.types import LLMRequest, LLMResponse, Usage
from chainrag.llm.pacing import Pacer, request_tokens
from chainrag.recipes.providers import import_litellm as import_litellm  # re-exported

T = TypeVar("T")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate code point left alone in a ``str`` (a reply's JSON may escape one, ``"\\ud800"``):
it cannot be encoded, printed or written as UTF-8, so a reply's text gets U+FFFD in its place."""
JsonMode = Literal["auto", "json_schema", "json_object", "instructions"]


@attrs.frozen
class RetryPolicy:
    """Exponential backoff with "equal jitter": delay_i ∈ [d/2, d], d = min(cap, base · 2^i)."""

    max_retries: int = attrs.field(default=4, validator=attrs.validators.ge(0))
    base_delay_s: float = attrs.field(default=1.0, validator=attrs.validators.ge(0.0))
    max_delay_s: float = attrs.field(default=30.0, validator=attrs.validators.ge(0.0))

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
        d = min(self.max_delay_s, self.base_delay_s * 2**attempt)
        return float(d / 2 + rng.uniform(0, d / 2))


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


CONNECT_FAILURES = {"ConnectError", "APIConnectionError", "ConnectionRefusedError"}
"""Exceptions (by class name, anywhere in the chain) of a server that could not be reached."""


def _chain_names(exc: BaseException) -> set[str]:
    """The class names of ``exc`` and of every exception it was raised from or during."""
    names: set[str] = set()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names |= {c.__name__ for c in type(current).__mro__}
        current = current.__cause__ or current.__context__
    return names


def classify(exc: BaseException) -> type[LLMError]:
    """The typed error for a litellm/OpenAI-SDK exception (by class name and status code)."""
    names = {c.__name__ for c in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    if _caused_by(exc, json.JSONDecodeError) or "Expecting value" in str(exc):
        return LLMResponseError  # litellm reports an unreadable body as a 500
    if "RateLimitError" in names or status == 429:
        return LLMRateLimitError
    if "Timeout" in names or "APITimeoutError" in names or isinstance(exc, TimeoutError):
        return LLMTimeoutError
    if _caused_by(exc, ConnectionError) or _chain_names(exc) & CONNECT_FAILURES:
        return LLMConnectionError  # litellm reports "connection refused" as a 500 too
    if "APIConnectionError" in names and status is None:
        return LLMConnectionError
    if isinstance(status, int) and status >= 500:
        return LLMServerError
    if names & {"InternalServerError", "ServiceUnavailableError", "BadGatewayError"}:
        return LLMServerError
    if names & {"APIResponseValidationError", "JSONDecodeError"}:
        return LLMResponseError
    if "APIConnectionError" in names:
        return LLMConnectionError
    if names & {"APIError"} and status is None:
        return LLMResponseError  # litellm's wrapper for unreadable bodies
    return LLMRequestError


@attrs.define
class LiteLLMBackend:
    """Completes requests with ``litellm.completion``.

    Args:
        api_base: Base URL of an OpenAI-compatible server, or None for the provider's.
        api_key: Only for servers that need a dummy key (the local server); real keys come from
            the environment through litellm.
        timeout_s: Per-attempt timeout.
        retry: The retry policy.
        json_mode: How a request's JSON schema is sent. ``json_schema``: OpenAI's structured
            outputs (``{"type": "json_schema", ...}``); ``json_object``: llama.cpp's
            grammar-constrained form (``{"type": "json_object", "schema": ...}``);
            ``instructions``: not at all (the prompt asks for JSON); ``auto``: ``json_schema``
            where litellm says the model supports it, else ``instructions``.
        free: Report cost 0 (a local model) instead of asking litellm's price table.
        seed: Seed of the jitter's random numbers.
        gone: For a server chainrag manages: after a failed attempt, how its process ended
            (``was killed by signal SIGSEGV``), or None while it runs. A dead server gets no
            retry: the attempt's error becomes a :class:`ServerDiedError` at once. A timed-out
            attempt there is not retried either (:class:`LocalTimeoutError`).
        pacer: Every attempt takes a turn of it (:mod:`chainrag.llm.pacing`: requests in
            flight, a minute's requests and tokens); a 429 that says ``Retry-After`` holds it,
            so that no request starts before then. None: no limit.
        params: Further ``litellm.completion`` keywords, passed as they are (``llm.params``:
            ``top_p``, ``extra_body``…; never one this class sets itself).
    """

    api_base: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    timeout_s: float = 120.0
    retry: RetryPolicy = RetryPolicy()
    json_mode: JsonMode = "auto"
    free: bool = False
    seed: int = 0
    sleep: Callable[[float], None] = time.sleep
    gone: Callable[[], str | None] | None = None
    pacer: Pacer | None = None
    params: Mapping[str, Any] = attrs.field(factory=dict)
    _rng: random.Random = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._rng = random.Random(self.seed)  # noqa: S311 - jitter, not cryptography

    def complete(self, request: LLMRequest) -> LLMResponse:
        litellm = import_litellm()
        kwargs = self._kwargs(request, litellm)
        return retrying(
            lambda: self._attempt(request, kwargs, litellm),
            lambda exc, attempt: self._failure(request, exc, attempt),
            self.retry, self._rng, self.sleep, self.pacer,
        )  # fmt: skip

    def _failure(self, request: LLMRequest, exc: Exception, attempt: int) -> LLMError:
        """The typed error of a failed attempt; a dead managed server's is final."""
        error = self._error(request, exc, attempt)
        if error.retryable and self.gone is not None and (death := self.gone()):
            return ServerDiedError(
                f"the local LLM server {death}",
                prompt_id=request.prompt_id,
                model=request.model,
                attempts=attempt + 1,
            )
        if self.gone is not None and isinstance(error, LLMTimeoutError):
            return LocalTimeoutError(
                local_timeout_words(request, self.timeout_s),
                prompt_id=request.prompt_id,
                model=request.model,
                attempts=attempt + 1,
            )
        return error

    def _attempt(self, request: LLMRequest, kwargs: dict[str, Any], litellm: Any) -> LLMResponse:
        """One attempt, in a turn of the pacer (when there is one)."""
        tokens = request_tokens(request)
        with self.pacer.turn(tokens) if self.pacer is not None else contextlib.nullcontext():
            started = time.perf_counter()
            raw = litellm.completion(**kwargs)
            response = self._response(request, raw, time.perf_counter() - started, litellm)
        if self.pacer is not None:
            self.pacer.settle(tokens, response.usage)
        return response

    def _kwargs(self, request: LLMRequest, litellm: Any) -> dict[str, Any]:
        if not request.model:
            raise LLMRequestError(
                "request has no model; bind it first", prompt_id=request.prompt_id
            )
        kwargs: dict[str, Any] = {
            **self.params,
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "timeout": self.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        optional = {
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "top_logprobs": request.top_logprobs,
            "logprobs": True if request.top_logprobs is not None else None,
            "api_base": self.api_base,
            "api_key": self.api_key,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if request.json_schema is not None:
            schema = json.loads(request.json_schema)
            mode = self._schema_mode(request.model, litellm)
            if mode == "json_schema":
                name = re.sub(r"[^A-Za-z0-9_-]", "_", request.prompt_id) or "answer"
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema},
                }
            elif mode == "json_object":
                kwargs["response_format"] = {"type": "json_object", "schema": schema}
        return kwargs

    def _schema_mode(self, model: str, litellm: Any) -> JsonMode:
        if self.json_mode != "auto":
            return self.json_mode
        try:
            supported = bool(litellm.supports_response_schema(model=model))
        except Exception:
            supported = False
        return "json_schema" if supported else "instructions"

    def _response(self, request: LLMRequest, raw: Any, latency: float, litellm: Any) -> LLMResponse:
        try:
            text = raw.choices[0].message.content
            usage = raw.usage
            prompt_tokens, completion_tokens = (
                int(usage.prompt_tokens),
                int(usage.completion_tokens),
            )
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise LLMResponseError(
                f"malformed response: {type(exc).__name__}: {exc}", prompt_id=request.prompt_id
            ) from exc
        if not isinstance(text, str):
            raise LLMResponseError("response has no text content", prompt_id=request.prompt_id)
        text = LONE_SURROGATE.sub("\ufffd", text)
        top = _top_logprobs(request, raw) if request.top_logprobs is not None else ()
        cost = 0.0 if self.free else _cost(raw, litellm)
        used = Usage(1, 0, prompt_tokens, completion_tokens, latency, cost)
        return LLMResponse(text=text, model=request.model, usage=used, top_logprobs=top)

    def _error(self, request: LLMRequest, exc: Exception, attempt: int) -> LLMError:
        if isinstance(exc, LLMError):
            kind: type[LLMError] = type(exc)
        else:
            kind = classify(exc)
        key = (self.api_key,) if self.api_key else ()  # a named variable's too, whatever its name
        if kind in (LLMConnectionError, LLMTimeoutError) and not isinstance(exc, LLMError):
            message = redact(connection_failure(exc, self.api_base, self.timeout_s), key)
        else:
            message = redact(f"{type(exc).__name__}: {exc}", key)
        prompt_id, model, attempts = request.prompt_id, request.model, attempt + 1
        if kind is LLMRateLimitError:
            return LLMRateLimitError(message, prompt_id=prompt_id, model=model, attempts=attempts,
                                     retry_after_s=retry_after(exc))  # fmt: skip
        return kind(message, prompt_id=prompt_id, model=model, attempts=attempts)


def local_timeout_words(request: LLMRequest, timeout_s: float) -> str:
    """Why a managed local server's timed-out request is not asked again, and what to do."""
    limit = f"up to max_tokens {request.max_tokens}" if request.max_tokens else "to its end"
    return (f"the local LLM server did not answer {request.prompt_id!r} within llm.timeout_s "
            f"{timeout_s:g} s; not asked again, since the server goes on generating that reply "
            f"({limit}) before it takes another request. Raise llm.timeout_s (--set "
            f"llm.timeout_s={max(2 * timeout_s, 600):g}) or lower the reply's token limit; the "
            "same command then asks the failed questions again")  # fmt: skip


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from or during, outermost first."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in found):
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def request_url(exc: BaseException) -> str | None:
    """The URL the failed request went to, as the innermost exception that carries it says
    (the HTTP client's: litellm's own wrappers name the provider's default URL whatever
    ``api_base`` was)."""
    for error in reversed(_chain(exc)):
        try:
            url = getattr(getattr(error, "request", None), "url", None)
        except RuntimeError:  # an httpx error made without its request
            continue
        if url is not None:
            return str(url)
    return None


UNREACHABLE_ERRNOS = {errno.ENETUNREACH: "network is unreachable",
                      errno.EHOSTUNREACH: "no route to the host"}  # fmt: skip


def connection_words(exc: BaseException, timeout_s: float) -> str:
    """What became of a connection, in words, with the client's own: ``timed out after 5 s``,
    ``connection refused ([Errno 111] …); is a server listening at that address and port?``
    or ``unreachable: why ([Errno -2] …)`` (the host's name not found, no route to it, the
    network down, the connection cut)."""
    chain = _chain(exc)
    detail = str(chain[-1]) or type(chain[-1]).__name__
    if any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in chain):
        return f"timed out after {timeout_s:g} s"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return f"connection refused ({detail}); is a server listening at that address and port?"
    if any(isinstance(e, socket.gaierror) for e in chain):
        return f"unreachable: its host name could not be resolved ({detail})"
    for error in chain:
        if isinstance(error, OSError) and error.errno in UNREACHABLE_ERRNOS:
            return f"unreachable: {UNREACHABLE_ERRNOS[error.errno]} ({detail})"
    return f"unreachable ({detail})"


def connection_failure(exc: BaseException, api_base: str | None, timeout_s: float) -> str:
    """A failed connection's message: where (the request's URL, else ``api_base``, else the
    provider's endpoint) and what became of it (:func:`connection_words`)."""
    where = request_url(exc) or api_base or "the provider's endpoint"
    return f"{where}: {connection_words(exc, timeout_s)}"


MAX_RETRY_AFTER_S = 120.0
"""The longest ``Retry-After`` waited for; a longer one waits this long, then tries again."""


def retrying(
    attempt: Callable[[], T],
    failure: Callable[[Exception, int], LLMError],
    retry: RetryPolicy,
    rng: random.Random,
    sleep: Callable[[float], None],
    pacer: Pacer | None,
) -> T:
    """``attempt()`` until it succeeds: after a failure, ``failure(exc, attempt)`` types it; a
    retryable one is tried again after ``retry``'s backoff, or after a 429's ``Retry-After``,
    which then holds ``pacer`` so that every request waits, not only this one; the last or a
    final one is raised. The LLM's completions and the remote encoders'
    (:mod:`chainrag.llm.encoders`) requests all go through it."""
    for number in range(retry.max_retries + 1):
        try:
            return attempt()
        except Exception as exc:
            error = failure(exc, number)
            if not error.retryable or number == retry.max_retries:
                raise error from exc
            wait = retry.delay(number, rng)
            if isinstance(error, LLMRateLimitError) and error.retry_after_s is not None:
                wait = min(error.retry_after_s, MAX_RETRY_AFTER_S)
                if pacer is not None:
                    pacer.hold(wait)
        sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def retry_after(exc: BaseException) -> float | None:
    """The seconds a 429's ``Retry-After`` (or ``retry-after-ms``) header asks for, where the
    exception carries the response (the OpenAI SDK's and litellm's errors do); None otherwise.
    An HTTP date is not read (providers send seconds)."""
    response = getattr(exc, "response", None)  # the SDKs' errors differ in shape
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except (TypeError, ValueError):
            continue
        if seconds >= 0:
            return seconds
    return None


def _top_logprobs(request: LLMRequest, raw: Any) -> tuple[tuple[str, float], ...]:
    """The first token's likeliest tokens and log-probabilities, as the response gives them."""
    try:
        first = raw.choices[0].logprobs.content[0]
        return tuple((str(t.token), float(t.logprob)) for t in first.top_logprobs)
    except (AttributeError, IndexError, TypeError, ValueError) as exc:
        raise LLMUnsupportedError(
            f"asked for the first token's top {request.top_logprobs} log-probabilities, the "
            f"response has none ({type(exc).__name__}: {exc}); does the endpoint give them?",
            prompt_id=request.prompt_id,
        ) from exc


def _cost(raw: Any, litellm: Any) -> float | None:
    """litellm's price for the response, or None where its price table has no entry."""
    try:
        return float(litellm.completion_cost(completion_response=raw))
    except Exception:
        return None


@attrs.frozen
class TokenPrice:
    """US dollars per prompt token and per completion token of a model."""

    prompt: float
    completion: float

    def dollars(self, prompt_tokens: float, completion_tokens: float) -> float:
        """The price of so many prompt and completion tokens."""
        return prompt_tokens * self.prompt + completion_tokens * self.completion


def token_price(model: str) -> TokenPrice | None:
    """litellm's price of ``model``'s tokens (``gpt-4o-mini``, ``openai/gpt-4o-mini``) from the
    price map bundled with litellm (never fetched), or None where the map has no entry for it.

    The same map prices every answered call (:func:`_cost`, through ``completion_cost``); this
    is its per-token price, for figures made before any call (``chainrag run --estimate``).
    """
    litellm = import_litellm()
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=1, completion_tokens=1
        )
    except Exception:  # litellm raises its own errors for a model it has no price for
        return None
    return TokenPrice(float(prompt), float(completion))
