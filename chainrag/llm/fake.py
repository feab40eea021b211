"""A scripted fake LLM for tests: answers keyed by prompt id, in order, and nothing else.

    llm = ScriptedLLM({"decompose": ['["Who wrote X?", "Where was this author born?"]'],
                       "answer_short": lambda request: "Paris"})

An unscripted prompt id, or a script that runs out, raises :class:`FakeLLMError` at once, so
a test never passes on an answer nobody wrote. Every request is kept in ``requests``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from chainrag.core.errors import ChainragError
from chainrag.core.types import LLMRequest, LLMResponse, Usage

Reply = str | LLMResponse | Callable[[LLMRequest], str | LLMResponse]


class FakeLLMError(ChainragError):
    """The fake LLM was asked something its script does not cover."""


class ScriptedLLM:
    """Replies from a script: per prompt id, a list of replies used in turn, or one function.

    Args:
        script: prompt id → a sequence of replies (each a string, a response whose text and
            ``top_logprobs`` are the reply's, or a function of the request returning either)
            consumed in order, or a single function answering every request with that id.
        model: The model name reported in responses.
    """

    def __init__(
        self,
        script: Mapping[str, Sequence[Reply] | Callable[[LLMRequest], str | LLMResponse]],
        model: str = "fake",
    ) -> None:
        self.script = dict(script)
        self.model = model
        self.requests: list[LLMRequest] = []
        self._turn: dict[str, int] = {}

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        entry = self.script.get(request.prompt_id)
        if entry is None:
            raise FakeLLMError(
                f"no script for prompt {request.prompt_id!r}; scripted: {sorted(self.script)}"
            )
        if callable(entry):
            text = entry(request)
        else:
            turn = self._turn.get(request.prompt_id, 0)
            if turn >= len(entry):
                raise FakeLLMError(
                    f"script for {request.prompt_id!r} has {len(entry)} replies; "
                    f"asked for #{turn + 1}"
                )
            self._turn[request.prompt_id] = turn + 1
            reply = entry[turn]
            text = reply(request) if callable(reply) else reply
        top = text.top_logprobs if isinstance(text, LLMResponse) else ()
        text = text.text if isinstance(text, LLMResponse) else text
        prompt_words = sum(len(m.content.split()) for m in request.messages)
        usage = Usage(calls=1, prompt_tokens=prompt_words, completion_tokens=len(text.split()))
        return LLMResponse(text, request.model or self.model, usage, top_logprobs=top)

    def calls(self, prompt_id: str | None = None) -> int:
        """How many requests were made (for one prompt id, or all)."""
        return sum(1 for r in self.requests if prompt_id in (None, r.prompt_id))
