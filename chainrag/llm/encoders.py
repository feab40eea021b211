"""Remote encoders through litellm: embedding models and rerankers, as the LLM's requests are.

    backend = EncoderBackend(api_base=None, pacer=Pacer(Limits(slots=4)))
    made = backend.embed("text-embedding-3-small", ["Paris is in France."])
    ranked = backend.rerank("cohere/rerank-english-v3.0", "capital?", ["Paris", "Lyon"])

Every attempt takes a turn of the endpoint's :class:`~chainrag.llm.pacing.Pacer` and is retried,
typed and Retry-After-honoured by :func:`~chainrag.llm.backend.retrying`, the LLM's own loop:
one machinery for every remote call. :func:`encoder_identity` is what keys an encoder's vectors
and scores in the stores (the model string, the endpoint, the dimensions), never a credential;
:func:`check_encoder` is the LLM's preflight for an encoder (its model and key, then one smallest
request, outside any usage, with no retry); :func:`encoder_price` is litellm's price map for it.
"""

from __future__ import annotations

import base64
import contextlib
import random
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import attrs
import numpy as np

from chainrag.core.credentials import redact
from chainrag.core.endpoint import endpoint_identity
from chainrag.core.errors import (
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
)
from chainrag.core.types import EncoderUsage, FloatArray
from chainrag.llm.backend import RetryPolicy, classify, import_litellm, retry_after, retrying
from chainrag.llm.pacing import CHARS_PER_TOKEN, Limits, Pacer
from chainrag.recipes.providers import missing_credentials, unknown_model

T = TypeVar("T")

warnings.filterwarnings(
    "ignore",
    message=r"Pydantic serializer warnings:\s+PydanticSerializationUnexpectedValue\(Expected "
    r"`list\[float\]`",
    category=UserWarning,
)  # litellm's response type says a vector is numbers; asked for base64, it holds a string

EncoderKind = Literal["embedding", "rerank"]


def encoder_identity(model: str, api_base: str | None, **more: object) -> str:
    """What computes an encoder's vectors or scores, for the stores' keys: the LLM's rule
    (:func:`chainrag.core.endpoint.endpoint_identity`: the model string and the endpoint's
    normalised base URL, never a credential), so two servers behind one name never share
    vectors; with each of ``more`` that is set (``dimensions``) as its parameters."""
    params = {k: v for k, v in more.items() if v is not None}
    return endpoint_identity("litellm", model, api_base, params or None)


def provider_of(model: str) -> str:
    """The provider litellm routes ``model`` to (``openai``, ``cohere``…); "" where none."""
    litellm = import_litellm()
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:  # litellm's own error for a model it cannot route
        return ""


def canonical_model(model: str) -> str:
    """``model`` as ``provider/name`` where litellm routes a bare name (``text-embedding-3-small``
    -> ``openai/text-embedding-3-small``), so one model written two ways is one recipe; as given
    otherwise."""
    if "/" in model:
        return model
    provider = provider_of(model)
    return f"{provider}/{model}" if provider else model


def model_entry(model: str) -> dict[str, Any]:
    """litellm's price-map entry of ``model`` (by its string, then without its provider);
    empty where it has none."""
    costs = import_litellm().model_cost
    entry = costs.get(model) or costs.get(model.split("/", 1)[-1]) or {}
    return dict(entry)


@attrs.frozen
class EncoderPrice:
    """US dollars per embedded token and per rerank search (query) of a model."""

    per_token: float
    per_search: float

    def dollars(self, tokens: float, searches: float) -> float:
        return tokens * self.per_token + searches * self.per_search


def encoder_price(model: str) -> EncoderPrice | None:
    """litellm's price of ``model``'s work (bundled price map, never fetched); None where the
    map has no entry, or the entry has no price."""
    entry = model_entry(model)
    token, search = entry.get("input_cost_per_token"), entry.get("input_cost_per_query")
    if token is None and search is None:
        return None
    return EncoderPrice(float(token or 0.0), float(search or 0.0))


def max_input_tokens(model: str) -> int | None:
    """The longest input ``model`` takes, in tokens, as litellm's map says; None if unknown."""
    found = model_entry(model).get("max_input_tokens")
    return int(found) if found else None


@attrs.frozen(eq=False)
class Embedded:
    """One embedding request's answer: its (n, d) float32 vectors, as sent, and its usage."""

    vectors: FloatArray
    usage: EncoderUsage


@attrs.frozen
class Reranked:
    """One rerank request's answer: a score for each document, by index, and its usage."""

    scores: tuple[float, ...]
    usage: EncoderUsage


@attrs.define
class EncoderBackend:
    """Sends embedding and rerank requests with ``litellm.embedding`` and ``litellm.rerank``.

    Args:
        api_base: Base URL of a server (vLLM, TEI, Infinity, llama.cpp, ollama), or None for
            the provider's.
        api_key: Only a dummy for a server that needs none; real keys come from the
            environment through litellm, as for the LLM.
        timeout_s: Per-attempt timeout.
        retry: The retry policy.
        pacer: Every attempt takes a turn of it (requests in flight, a minute's requests and
            tokens); a 429's Retry-After holds it.
    """

    api_base: str | None = None
    api_key: str | None = None
    timeout_s: float = 60.0
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    pacer: Pacer | None = None
    seed: int = 0
    sleep: Callable[[float], None] = time.sleep
    first_refusal_stops: bool = True
    """A refused connection, key or model before any request was answered is an
    :class:`LLMUnavailableError`, which stops the run, as the check before the first question
    would have (it is put off where the store holds this endpoint's values)."""
    _rng: random.Random = attrs.field(init=False)
    _answered: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._rng = random.Random(self.seed)  # noqa: S311 - jitter, not cryptography

    def embed(
        self,
        model: str,
        texts: Sequence[str],
        *,
        dimensions: int | None = None,
        input_type: str | None = None,
        encoding_format: str | None = None,
    ) -> Embedded:
        """The vectors of ``texts`` in one request (``input_type`` where the provider takes
        one: Cohere's ``search_query``, Voyage's ``query``; ``encoding_format`` where given:
        ``base64``, float32 bytes, which a response may ignore and send numbers)."""
        litellm = import_litellm()
        kwargs = self._common(model) | {"input": list(texts)}
        if dimensions is not None:  # asked of any model: a served one may take it too
            kwargs |= {"dimensions": dimensions, "allowed_openai_params": ["dimensions"]}
        if input_type is not None:
            kwargs["input_type"] = input_type
        if encoding_format is not None:
            kwargs["encoding_format"] = encoding_format
        tokens = sum(-(-len(t) // CHARS_PER_TOKEN) for t in texts)

        def send() -> Embedded:
            started = time.perf_counter()
            raw = litellm.embedding(**kwargs)
            return self._embedded(model, raw, len(texts), time.perf_counter() - started)

        return self._paced(send, tokens, "embedding", model)

    def rerank(self, model: str, query: str, documents: Sequence[str]) -> Reranked:
        """The relevance score of each of ``documents`` to ``query``, in one request."""
        litellm = import_litellm()
        kwargs = self._common(model) | {"query": query, "documents": list(documents)}
        kwargs |= {"top_n": len(documents), "return_documents": False}
        tokens = sum(-(-len(t) // CHARS_PER_TOKEN) for t in (query, *documents))

        def send() -> Reranked:
            started = time.perf_counter()
            raw = litellm.rerank(**kwargs)
            return self._reranked(model, raw, len(documents), time.perf_counter() - started)

        return self._paced(send, tokens, "rerank", model)

    def _common(self, model: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model, "timeout": self.timeout_s, "num_retries": 0,
                                  "max_retries": 0}  # fmt: skip
        for name, value in (("api_base", self.api_base), ("api_key", self.api_key)):
            if value is not None:
                kwargs[name] = value
        return kwargs

    def _paced(self, send: Callable[[], T], tokens: int, kind: EncoderKind, model: str) -> T:
        """``send`` retried by the LLM's own loop, each attempt in a turn of the pacer."""

        def attempt() -> T:
            with self.pacer.turn(tokens) if self.pacer is not None else contextlib.nullcontext():
                return send()

        def failure(exc: Exception, number: int) -> LLMError:
            return _typed(exc, kind, model, number + 1)

        try:
            answer = retrying(attempt, failure, self.retry, self._rng, self.sleep, self.pacer)
        except (LLMConnectionError, LLMRequestError) as exc:
            if self._answered or not self.first_refusal_stops:  # one question's failure
                raise
            raise LLMUnavailableError(f"{model} refused its first {kind} request: {exc}") from exc
        self._answered = True
        return answer

    def _embedded(self, model: str, raw: Any, n: int, latency: float) -> Embedded:
        try:
            rows = sorted(raw.data, key=lambda row: int(_get(row, "index")))
            vectors = np.stack([_vector(_get(row, "embedding")) for row in rows])
            tokens = int(getattr(raw.usage, "prompt_tokens", 0) or 0) if raw.usage else 0
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise LLMResponseError(f"malformed embedding response: {type(exc).__name__}: {exc}",
                                   prompt_id="embedding", model=model) from exc  # fmt: skip
        if len(vectors) != n:
            raise LLMResponseError(f"asked for {n} vectors, the response holds {len(vectors)}",
                                   prompt_id="embedding", model=model)  # fmt: skip
        cost = self._dollars(model, tokens, 0)
        usage = EncoderUsage(requests=1, tokens=tokens, sent=n, latency_s=latency, cost_usd=cost)
        return Embedded(vectors.astype(np.float32, copy=False), usage)

    def _reranked(self, model: str, raw: Any, n: int, latency: float) -> Reranked:
        scores = [float("nan")] * n
        try:
            for row in raw.results:
                scores[int(_get(row, "index"))] = float(_get(row, "relevance_score"))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise LLMResponseError(f"malformed rerank response: {type(exc).__name__}: {exc}",
                                   prompt_id="rerank", model=model) from exc  # fmt: skip
        if any(s != s for s in scores):  # NaN: a document the response left out
            raise LLMResponseError(f"the rerank response scores fewer than the {n} documents",
                                   prompt_id="rerank", model=model)  # fmt: skip
        cost = self._dollars(model, 0, 1)
        usage = EncoderUsage(requests=1, searches=1, sent=n, latency_s=latency, cost_usd=cost)
        return Reranked(tuple(scores), usage)

    def _dollars(self, model: str, tokens: int, searches: int) -> float | None:
        """litellm's price of the work; a server of one's own unknown to the map costs 0."""
        price = encoder_price(model)
        if price is not None:
            return price.dollars(tokens, searches)
        return 0.0 if self.api_base is not None else None


def _get(row: Any, name: str) -> Any:
    """A field of a response row, whether litellm gives a mapping or an object."""
    return row[name] if isinstance(row, dict) else getattr(row, name)


def _vector(value: Any) -> FloatArray:
    """An embedding as a float32 row: a list of numbers, or base64 of little-endian float32
    (the OpenAI API's ``encoding_format: base64``)."""
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def _typed(exc: Exception, kind: EncoderKind, model: str, attempts: int) -> LLMError:
    """The typed error of a failed encoder request (as the LLM's are typed)."""
    if isinstance(exc, LLMError):
        return exc
    error = classify(exc)
    message = redact(f"{type(exc).__name__}: {exc}")
    if error is LLMRateLimitError:
        return LLMRateLimitError(message, prompt_id=kind, model=model, attempts=attempts,
                                 retry_after_s=retry_after(exc))  # fmt: skip
    return error(message, prompt_id=kind, model=model, attempts=attempts)


def keyless_key(model: str, api_base: str | None) -> str | None:
    """A dummy key for a server of one's own at ``api_base`` whose provider's key the
    environment lacks (the clients refuse to start without one); a real key in the environment
    is always left to litellm."""
    if api_base and missing_credentials(model, None):
        return "unused"
    return None


def encoder_backend(
    model: str,
    api_base: str | None,
    limits: Limits,
    *,
    timeout_s: float = 60.0,
    max_retries: int = 4,
    first_refusal_stops: bool = True,
) -> EncoderBackend:
    """The backend of one remote encoder, paced under ``limits``."""
    return EncoderBackend(api_base=api_base, api_key=keyless_key(model, api_base),
                          timeout_s=timeout_s, retry=RetryPolicy(max_retries=max_retries),
                          pacer=Pacer(limits), first_refusal_stops=first_refusal_stops)  # fmt: skip


def check_encoder(
    model: str,
    api_base: str | None,
    kind: EncoderKind,
    *,
    call: bool,
    encoding_format: str | None = None,
) -> None:
    """The LLM's preflight for a remote encoder: litellm routes ``model`` and, for a provider's
    own endpoint, its credentials are set (no call; a server at ``api_base`` gets a dummy key
    where the environment has none, as a served LLM does), then, with ``call``, one smallest
    request (one word embedded, in the ``encoding_format`` the run asks for, or one document
    ranked), sent with no retry and counted in no usage. A refused connection, a refused key or
    an unknown model is an :class:`LLMUnavailableError` (the run stops, nothing recorded); a
    429, a 5xx or a timeout passes, as the LLM's probe does."""
    if reason := unknown_model(model):
        raise LLMUnavailableError(f"litellm cannot send requests for {model}: {reason}")
    if api_base is None and (missing := missing_credentials(model, None)):
        raise LLMUnavailableError(
            f"{model} needs {', '.join(missing)} in the environment, and it is not set (litellm "
            "reads the key from there; chainrag never stores it)"
        )
    if not call:
        return
    # this is the check: its own refusal is said below
    backend = encoder_backend(model, api_base, Limits(), max_retries=0, first_refusal_stops=False)
    try:
        if kind == "embedding":
            backend.embed(model, ["OK"], encoding_format=encoding_format)
        else:
            backend.rerank(model, "OK", ["OK"])
    except (LLMConnectionError, LLMRequestError) as exc:
        what = "embed one word" if kind == "embedding" else "rank one document"
        hint = (f" (asked for {encoding_format} vectors: a server that refuses them takes "
                "index.embedder.encoding_format=float)" if encoding_format else "")  # fmt: skip
        raise LLMUnavailableError(f"{model} did not {what}: {exc}{hint}") from exc
    except LLMError:
        return
