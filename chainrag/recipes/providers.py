"""What litellm knows of a model string, asked without a call: whether it can route it (a
provider it knows) and which environment variables it would read for the provider's credentials.

    unknown_model("nonsense/xyz")          # "LLM Provider NOT provided. ..." (litellm's words)
    missing_credentials("openai/gpt-4o-mini", None)  # ("OPENAI_API_KEY",) while it is unset

``--llm`` uses the first to refuse a model before anything runs; ``chainrag run`` uses the second
before the first live request (:mod:`chainrag.llm.preflight`). litellm's price map is read from
the package, never from the network (:func:`import_litellm`).
"""

from __future__ import annotations

import os
from typing import Any

KEYLESS_PREFIXES = ("openai/", "hosted_vllm/", "ollama/", "ollama_chat/", "lm_studio/")
"""Model strings that, given an ``api_base``, speak to a server of one's own: no key is needed
there (chainrag sends a dummy one where the client insists; a real one in the environment is
still used)."""


def import_litellm() -> Any:
    """Import litellm with its price map read from the package, never from the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = False
    # chainrag retries every request itself (llm.backend.retrying); litellm's OpenAI embedding
    # path reads max_retries=0 as unset and falls back to this default, retrying 429s unseen
    litellm.DEFAULT_MAX_RETRIES = 0  # type: ignore[attr-defined]
    return litellm


def unknown_model(model: str) -> str | None:
    """Why litellm cannot route ``model`` (no provider it knows), in litellm's own words; None
    where it can. Makes no call."""
    litellm = import_litellm()
    try:
        litellm.get_llm_provider(model=model)
    except Exception as exc:  # litellm raises its BadRequestError for an unknown provider
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        return first.removeprefix("litellm.BadRequestError: ")
    return None


def missing_credentials(model: str, api_base: str | None) -> tuple[str, ...]:
    """The environment variables litellm says ``model`` needs and this process lacks (its
    ``validate_environment``; no call). A server's address (``OLLAMA_API_BASE``) is no
    credential: litellm has a default, and ``api_base`` sets it. A model string that names a
    server of one's own at ``api_base`` (:data:`KEYLESS_PREFIXES`) needs none."""
    if api_base is not None and model.startswith(KEYLESS_PREFIXES):
        return ()
    litellm = import_litellm()
    try:
        found = litellm.validate_environment(model=model, api_base=api_base)
    except Exception:  # a provider litellm cannot check: the first call will tell
        return ()
    missing = found.get("missing_keys") or []
    return tuple(str(k) for k in missing if not str(k).endswith(("_API_BASE", "_BASE_URL")))
