"""What a recipe's ``llm:`` may pass to litellm beyond its own fields, and where its key is.

    params_problem({"top_p": 0.9, "extra_body": {"top_k": 20}})   # None: passed through
    params_problem({"temperature": 0})     # 'temperature is llm.temperature: set it there'
    key_env_problem("VLLM_API_KEY")        # None; key_env_problem("sk-…") says why not

``llm.params`` passes further keywords to every ``litellm.completion`` call as they are
(``top_p``, ``extra_body``, ``extra_headers``, ``stop``…: DSPy's ``LM(..., **kwargs)``,
lm-eval's ``--model_args``); those chainrag sets itself from the recipe's fields or per request
are refused, naming the field to use. ``llm.api_key_env`` names the environment variable that
holds the key (an OpenAI-compatible server whose key is in ``VLLM_API_KEY``): a recipe and a run
folder hold the variable's name, never the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

OWN_KEYWORDS = {
    "model": "llm.model",
    "temperature": "llm.temperature",
    "max_tokens": "llm.max_tokens",
    "max_completion_tokens": "llm.max_tokens",
    "seed": "llm.seed",
    "timeout": "llm.timeout_s",
    "max_retries": "llm.max_retries",
    "num_retries": "llm.max_retries",
    "api_base": "llm.api_base",
    "base_url": "llm.api_base",
    "api_key": "llm.api_key_env (the name of the variable that holds it, never the key)",
    "response_format": "llm.json_mode",
    "messages": "the prompt of each request",
    "logprobs": "each request",
    "top_logprobs": "each request",
    "stream": "chainrag (it reads whole answers)",
    "n": "chainrag (it reads one answer a request)",
}
"""The ``litellm.completion`` keywords chainrag sets itself, each with what sets it."""

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def params_problem(params: Mapping[str, Any]) -> str | None:
    """Why ``params`` cannot be passed to litellm as they are (a keyword chainrag sets itself,
    a value that is not plain data); None where they can."""
    own = [key for key in params if key in OWN_KEYWORDS]
    if own:
        return "; ".join(f"{key} is set by {OWN_KEYWORDS[key]}, not by llm.params" for key in own)
    try:
        json.dumps(dict(params), sort_keys=True)
    except (TypeError, ValueError) as exc:
        return f"values must be plain data (numbers, strings, lists, mappings): {exc}"
    return None


def key_env_problem(name: str) -> str | None:
    """Why ``name`` is not the name of an environment variable (a key pasted in its place);
    None where it is."""
    if ENV_NAME.match(name):
        return None
    return ("names the environment variable that holds the key (such as VLLM_API_KEY), never "
            "the key itself")  # fmt: skip
