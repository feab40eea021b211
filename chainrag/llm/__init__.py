"""The LLM layer: every model call in chainrag goes through here.

:func:`open_llm` turns a recipe's ``llm:`` into a ready LLM — starting and later stopping a
managed local server for ``kind: local_gguf`` — wrapped in the response cache and bound to the
recipe's model and sampling parameters. Wrap it per question in
:class:`~chainrag.llm.stack.MeteredLLM` to count that question's usage.

The managed server keeps the previous prompt's shared whole chunks and evaluates the rest as
a full evaluation would (``prompt_cache: aligned``, the default), or evaluates every prompt in
full (``fresh``: the same answers, slower), or reuses any shared prefix (``reuse``; see
:mod:`chainrag.llm.fresh_server`); :func:`managed_prompt_cache` is the mode a run used.

Layer: may import :mod:`chainrag.core`, :mod:`chainrag.protocols` and :mod:`chainrag.recipes`
(the ``llm:`` section, the model catalogue); never components, indexes, methods or above.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from chainrag.core.endpoint import endpoint_identity as remote_identity
from chainrag.core.endpoint import params_part
from chainrag.core.errors import Problem, RecipeError
from chainrag.llm.backend import JsonMode, LiteLLMBackend, RetryPolicy
from chainrag.llm.cache import CachedLLM, CacheMode, ResponseCache
from chainrag.llm.pacing import Limits, Pacer
from chainrag.llm.preflight import CheckedLLM, check_spec, probe
from chainrag.llm.server import PromptCache
from chainrag.llm.stack import BoundLLM, Ledger, MeteredLLM
from chainrag.protocols.llm import LLM
from chainrag.recipes.models import DEFAULT_N_CTX
from chainrag.recipes.recipe import LLMSpec

__all__ = [
    "BoundLLM", "CacheMode", "Ledger", "MeteredLLM", "PromptCache", "ResponseCache",
    "bound_model", "check_llm", "endpoint_identity", "managed_prompt_cache", "open_llm",
]  # fmt: skip


@contextlib.contextmanager
def open_llm(
    spec: LLMSpec,
    *,
    cache_path: Path | None = None,
    cache_mode: CacheMode = "use",
    slots: int | None = None,
    checked: bool = False,
) -> Iterator[LLM]:
    """A ready LLM for ``spec``; a managed local server lives exactly as long as the block.

    Args:
        spec: The recipe's ``llm:``.
        cache_path: SQLite file of the response cache, or None for no cache.
        cache_mode: ``use``, ``bypass`` or ``refresh`` (see :data:`CacheMode`).
        slots: At most this many live requests in flight at once, across threads (None: no
            limit). With ``spec``'s requests and tokens a minute, it paces every attempt the
            backend makes (:class:`~chainrag.llm.pacing.Pacer`), below the response cache, so
            an answer from the cache never waits for a turn.
        checked: The LLM passed :func:`check_llm` already; otherwise the same checks run
            before its first live request (:class:`~chainrag.llm.preflight.CheckedLLM`).
    """
    with contextlib.ExitStack() as stack:
        pacer = Pacer(Limits(slots, spec.requests_per_minute, spec.tokens_per_minute))
        inner, model = _backend(spec, stack, pacer)
        if not checked and managed_prompt_cache(spec) is None:  # a managed server proves itself
            inner = CheckedLLM(inner, _checks(spec, pacer))
        if cache_path is not None:
            cache = ResponseCache(cache_path)
            stack.callback(cache.close)
            inner = CachedLLM(inner, cache, cache_mode, endpoint_identity(spec))
        yield BoundLLM(inner, model, spec.temperature, spec.max_tokens, spec.seed,
                       endpoint_identity(spec))  # fmt: skip


def check_llm(spec: LLMSpec, *, call: bool) -> None:
    """Whether ``spec``'s LLM can answer at all, before a run (:mod:`chainrag.llm.preflight`):
    its model and credentials (no call), then, with ``call``, one one-token request to its
    endpoint; an :class:`~chainrag.core.errors.LLMUnavailableError` says what is wrong. Nothing
    for the managed local server, whose start proves it."""
    if managed_prompt_cache(spec) is not None:
        return
    _checks(spec, Pacer(Limits()), call=call)(bound_model(spec))


def _checks(spec: LLMSpec, pacer: Pacer, *, call: bool = True) -> Callable[[str], None]:
    """The preflight checks of ``spec`` (its endpoint probed through ``pacer``, no retry)."""

    def run(model: str) -> None:
        check_spec(spec)
        if call:
            with contextlib.ExitStack() as stack:
                probe(_backend(spec, stack, pacer, retries=0)[0], model)

    return run


def bound_model(spec: LLMSpec) -> str:
    """The model string ``spec``'s requests are sent with (a local model's server speaks the
    OpenAI protocol: ``openai/NAME``)."""
    return f"openai/{spec.model}" if spec.kind == "local_gguf" else spec.model


def _backend(
    spec: LLMSpec, stack: contextlib.ExitStack, pacer: Pacer, *, retries: int | None = None
) -> tuple[LLM, str]:
    """The backend that answers ``spec`` and the model string it is asked for: the managed
    server (started here, stopped with ``stack``; restarted once if it dies), a local model's
    server at ``api_base``, or a provider through litellm (``retries``: in place of the
    spec's)."""
    retry = RetryPolicy(max_retries=spec.max_retries if retries is None else retries)
    mode = managed_prompt_cache(spec)
    if mode is not None:
        from chainrag.llm.served import ServedLLM
        from chainrag.llm.server import LocalServer

        server = stack.enter_context(LocalServer.for_model(
            spec.model, prompt_cache=mode, n_ctx=spec.n_ctx or DEFAULT_N_CTX))  # fmt: skip

        def served(base: str, gone: Callable[[], str | None]) -> LLM:
            return LiteLLMBackend(
                api_base=base, api_key="unused", timeout_s=spec.timeout_s, retry=retry,
                free=True, json_mode=_local_json_mode(spec), gone=gone, pacer=pacer,
                params=spec.params,
            )  # fmt: skip

        return ServedLLM(server, served), server.litellm_model
    if spec.kind == "local_gguf":
        return LiteLLMBackend(
            api_base=spec.api_base, api_key=_named_key(spec) or "unused",
            timeout_s=spec.timeout_s, retry=retry, free=True, json_mode=_local_json_mode(spec),
            pacer=pacer, params=spec.params,
        ), bound_model(spec)  # fmt: skip
    return LiteLLMBackend(
        api_base=spec.api_base, api_key=_named_key(spec) or _keyless_server_key(spec),
        timeout_s=spec.timeout_s, retry=retry, json_mode=spec.json_mode, pacer=pacer,
        params=spec.params,
    ), spec.model  # fmt: skip


def managed_prompt_cache(spec: LLMSpec) -> PromptCache | None:
    """How the managed local server evaluates prompts for ``spec``; None for any other endpoint.

    ``spec.prompt_cache`` where chainrag starts the server itself (``kind: local_gguf`` without
    ``api_base``), ``aligned`` when it is unset; None where a server chainrag does not manage
    answers, whose prompt evaluation is its own (``prompt_cache: reuse`` or ``aligned``, or an
    ``n_ctx``, there is an error, since chainrag could not honour it).
    """
    if spec.kind == "local_gguf" and spec.api_base is None:
        return spec.prompt_cache or "aligned"
    if spec.n_ctx is not None:
        raise RecipeError(
            "llm",
            [Problem("llm.n_ctx", "applies only to the managed local server (kind: local_gguf "
                     "without api_base); a server at api_base or a provider has its own context "
                     "window: remove n_ctx")],
        )  # fmt: skip
    if spec.prompt_cache not in (None, "fresh"):
        raise RecipeError(
            "llm",
            [Problem("llm.prompt_cache", f"{spec.prompt_cache} applies only to the managed local "
                     "server (kind: local_gguf without api_base); a server at api_base or a "
                     "provider evaluates prompts its own way: remove prompt_cache")],
        )  # fmt: skip
    return None


def endpoint_identity(spec: LLMSpec) -> str:
    """What answers ``spec``'s requests, for the response cache's key; never a credential.

    A managed local model is its GGUF's pinned sha256 (the server refuses any other file),
    followed by ``+prompt_cache:fresh`` when it evaluates every prompt in full or in aligned
    chunks (the two give the same logits, bit for bit): such answers differ from those of the
    prefix-reusing server, which keeps the bare identity its cached answers were made under
    (before the mode existed, every answer was made by reuse). Any other endpoint — a
    self-hosted server, a provider — is the one rule every remote model shares
    (:func:`chainrag.core.endpoint.endpoint_identity`): the kind, the model string, the base URL
    normalised (without userinfo; ``provider-default`` where none is set). Either way the
    recipe's ``llm.params`` follow where it sets any (they change answers).
    """
    mode = managed_prompt_cache(spec)
    if mode is not None:
        from chainrag.recipes.models import get_model

        sha = get_model(spec.model).sha256
        fresh = "" if mode == "reuse" else "+prompt_cache:fresh"
        return f"gguf:sha256:{sha}{fresh}{params_part(spec.params)}"
    return remote_identity(spec.kind, spec.model, spec.api_base, spec.params)


def _local_json_mode(spec: LLMSpec) -> JsonMode:
    """llama.cpp's server takes a schema as ``{"type": "json_object", "schema": ...}``."""
    return "json_object" if spec.json_mode == "auto" else spec.json_mode


def _named_key(spec: LLMSpec) -> str | None:
    """The key in the environment variable ``llm.api_key_env`` names; None where it names none
    (litellm then reads the provider's variable) or the variable is unset (the checks before
    the first request say so)."""
    return os.environ.get(spec.api_key_env) or None if spec.api_key_env else None


def _keyless_server_key(spec: LLMSpec) -> str | None:
    """A dummy key for an OpenAI-compatible ``api_base`` when the environment has no key.

    Self-hosted servers (vLLM, llama.cpp, ollama's /v1) need none, but the OpenAI client
    refuses to start without one. A real key in the environment is always left to litellm.
    """
    if spec.api_base and spec.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return "unused"
    return None
