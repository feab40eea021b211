"""A provider's tokens, counted offline: what ``chainrag run --estimate`` prices before a call.

    tokenizer = provider_tokenizer("openai/gpt-4o-mini")   # tiktoken o200k_base, its own
    tokenizer.messages(request.messages), tokenizer.text("Paris")
    llm = ProviderCounted(local_llm, tokenizer)             # its usage in the provider's tokens

The count is litellm's ``token_counter`` (the prompt's messages with its per-message overhead,
a completion as plain text), with the tokenizer litellm selects for the model without its
provider, from the files bundled with litellm and never a download: tiktoken's encodings for
OpenAI's models, the bundled Anthropic tokenizer for the models litellm counts with it. Where
litellm has no tokenizer of the model offline (any other provider, a served model), tiktoken's
``cl100k_base`` stands in, and the tokenizer says so (``own`` is False).

A run folder records its token counts by prompt id, as its LLM counted them, and no texts: a
run of the local model holds its tokenizer's counts (Qwen2.5's). :data:`LOCAL_RATIO` is the
measured number of a provider encoding's tokens per local token over the same texts
(``scripts/token_ratio.py``), by which such counts are converted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from chainrag.core.types import LLMRequest, LLMResponse, Message
from chainrag.llm.backend import import_litellm
from chainrag.protocols.llm import LLM

STAND_IN = "cl100k_base"
"""The encoding that counts a model's tokens where litellm has none of its own offline."""

LOCAL_RATIO: Mapping[str, float] = {"o200k_base": 0.939, "cl100k_base": 0.956}
"""Tokens of each encoding per token of the local model's tokenizer (Qwen2.5's) over the same
texts, as ``scripts/token_ratio.py`` measured them over the passages and questions of the first
30 questions of MuSiQue, 2Wiki and HotpotQA (0.934–0.941 and 0.951–0.958 by dataset); an
encoding not here is not converted."""


@attrs.frozen
class ProviderTokenizer:
    """How ``model``'s tokens are counted: ``encoding`` (a tiktoken encoding's name, or
    ``anthropic``), the model's own as litellm knows it (``own``) or :data:`STAND_IN`."""

    model: str
    encoding: str
    own: bool

    def messages(self, messages: Sequence[Message]) -> int:
        """The prompt tokens of ``messages``, with litellm's per-message overhead."""
        plain = [{"role": m.role, "content": m.content} for m in messages]
        return int(import_litellm().token_counter(messages=plain, **self._counter()))

    def text(self, text: str) -> int:
        """The tokens of a completion's ``text``."""
        counted = import_litellm().token_counter(text=text, count_response_tokens=True,
                                                 **self._counter())  # fmt: skip
        return int(counted)

    def _counter(self) -> dict[str, Any]:
        """``token_counter``'s arguments that select this tokenizer (never a download): the
        model without its provider where it is its own (litellm picks the tokenizer by that
        name, and ``openai/gpt-4o-mini`` would get ``cl100k_base``), else no model, which
        litellm counts with :data:`STAND_IN`."""
        return {"model": bare_model(self.model) if self.own else ""}

    def __str__(self) -> str:
        if self.own:
            return f"{self.model}'s tokenizer ({self.encoding}, as litellm counts)"
        return (f"tiktoken's {self.encoding}, standing in: litellm has no tokenizer of "
                f"{self.model} offline")  # fmt: skip


def bare_model(model: str) -> str:
    """``model`` without its provider (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``), as litellm
    splits it; as given where litellm does not know the provider."""
    litellm = import_litellm()
    try:
        return str(litellm.get_llm_provider(model)[0])
    except Exception:  # litellm's own error for a provider it does not know
        return model


def provider_tokenizer(model: str) -> ProviderTokenizer:
    """The tokenizer litellm counts ``model``'s tokens with, offline (see the module
    docstring)."""
    import_litellm()
    from litellm.litellm_core_utils.token_counter import openai_tokenizer_encoding
    from litellm.utils import huggingface_tokenizer_kind
    from tiktoken.model import encoding_name_for_model

    bare = bare_model(model)
    kind = huggingface_tokenizer_kind(bare)
    if kind == "anthropic":  # bundled with litellm
        return ProviderTokenizer(model, "anthropic", own=True)
    if kind is not None:  # litellm would download it from the Hugging Face hub
        return ProviderTokenizer(model, STAND_IN, own=False)
    try:
        encoding_name_for_model(bare)
    except KeyError:
        return ProviderTokenizer(model, STAND_IN, own=False)
    return ProviderTokenizer(model, str(openai_tokenizer_encoding(bare).name), own=True)


@attrs.frozen
class ProviderCounted:
    """An LLM whose answered calls report their tokens as ``tokenizer`` counts them (their
    prompt's messages, their text): a local model's sample priced in a provider's tokens."""

    inner: LLM
    tokenizer: ProviderTokenizer

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.inner.complete(request)
        if response.cached:  # a hit carries no tokens
            return response
        prompt = self.tokenizer.messages(request.messages)
        usage = attrs.evolve(response.usage, prompt_tokens=prompt,
                             completion_tokens=self.tokenizer.text(response.text))  # fmt: skip
        return attrs.evolve(response, usage=usage)


def cut_to_tokens(model: str, text: str, limit: int) -> str | None:
    """``text`` cut to its first ``limit`` tokens as ``model``'s tokenizer counts them
    (:func:`provider_tokenizer`'s tiktoken encoding, :data:`STAND_IN` where it has none), or
    None where it is within the limit. A text of at most ``limit`` UTF-8 bytes is within it
    uncounted (a byte-level BPE token holds at least one byte)."""
    if len(text.encode("utf-8")) <= limit:
        return None
    import_litellm()  # points tiktoken at the encodings litellm bundles, never a download
    import tiktoken

    found = provider_tokenizer(model).encoding
    encoding = tiktoken.get_encoding(found if found != "anthropic" else STAND_IN)
    tokens = encoding.encode(text, disallowed_special=())
    return encoding.decode(tokens[:limit]) if len(tokens) > limit else None
