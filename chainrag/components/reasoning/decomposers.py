"""Decomposition (ChainRAG §3.3): the question's sub-questions from the LLM as JSON, and the
judge that says whether a question needs them; :func:`ask_json`, the JSON ask they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from chainrag.core.errors import LLMOutputError
from chainrag.core.types import (
    Decomposition,
    Verdict,
)
from chainrag.llm.prompts import load_prompt
from chainrag.llm.structured import complete_json
from chainrag.protocols.context import Context
from chainrag.recipes.registry import (
    DECOMPOSERS,
    MULTI_HOP_JUDGES,
)

T = TypeVar("T")


def _string_list(value: Any) -> list[str]:
    if isinstance(value, dict):  # {"sub_questions": [...]} and similar
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty JSON array of sub-questions")
    items = [str(v).strip() for v in value if str(v).strip()]
    if not items:
        raise ValueError("expected a non-empty JSON array of sub-questions")
    return items


def _is_multi_hop(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("is_multi_hop"), bool):
        raise ValueError('expected {"is_multi_hop": true|false}')
    return bool(value["is_multi_hop"])


def ask_json(
    who: str, prompt_id: tuple[str, int], question: str, ctx: Context, read: Callable[[Any], T]
) -> tuple[T | None, str]:
    """Ask the prompt (id, version) about ``question`` for JSON, read with ``read``
    (:func:`~chainrag.llm.structured.complete_json`: one repair, then give up).

    Returns:
        The value and the last reply's text, or None and the error when the reply was still
        unusable after the repair. ``who`` names the stage if the context has no LLM.
    """
    llm = ctx.require_llm(who)
    request = load_prompt(*prompt_id).request(question=question)
    try:
        value, responses = complete_json(llm, request, read)
    except LLMOutputError as exc:
        return None, str(exc)
    return value, responses[-1].text


@DECOMPOSERS.register("llm_json")
@attrs.frozen
class LLMDecomposer:
    """Sub-questions as a JSON array from the LLM: ``decompose@v2`` is appendix D's prompt
    (Figure 8) with a worked example for each kind; ``prompt_version: 1`` is our earlier, shorter
    prompt, which also told the model to refer to earlier answers with a pronoun;
    ``prompt_version: 3`` (not the paper's) is v2 with numbered references (``Where was #1
    born?``) for the ``numbered`` rewriter.

    Unusable output (after one repair) falls back to the question itself, marked ``fallback``
    in the trace. Recipe: ``{kind: llm_json, max_sub_questions: 4}``.
    """

    max_sub_questions: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    prompt_version: int = 2

    def __call__(self, question: str, ctx: Context) -> Decomposition:
        prompt_id = ("decompose", self.prompt_version)
        subs, raw = ask_json("llm_json decomposer", prompt_id, question, ctx, _string_list)
        if subs is None:
            return Decomposition((question,), fallback=True, raw=raw)
        return Decomposition(tuple(subs[: self.max_sub_questions]), raw=raw)


@MULTI_HOP_JUDGES.register("llm_json")
@attrs.frozen
class LLMMultiHopJudge:
    """Asks the LLM for ``{"is_multi_hop": bool}`` (the authors' code's first step); an
    unusable reply counts as multi-hop, so the question is still decomposed.
    Recipe: ``{kind: llm_json}``.
    """

    prompt_version: int = 1

    def __call__(self, question: str, ctx: Context) -> Verdict:
        prompt_id = ("multi_hop", self.prompt_version)
        multi, raw = ask_json("llm_json multi-hop judge", prompt_id, question, ctx, _is_multi_hop)
        return Verdict(True if multi is None else multi, raw)
