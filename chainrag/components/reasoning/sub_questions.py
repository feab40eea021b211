"""From one sub-question to the next (ChainRAG §3.3): the rewriter fills in the entity a
sub-question refers to from the earlier questions and answers (:func:`history_text`, as every
prompt shows them), the summarizer condenses an unanswered one's sentences for the next."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from chainrag.components.reasoning.answer_form import clean_answer
from chainrag.components.retrieval.judges import numbered
from chainrag.core.types import (
    SubAnswer,
)
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.recipes.registry import (
    REWRITERS,
    SUMMARIZERS,
)


def history_text(history: Sequence[SubAnswer]) -> str:
    return "\n".join(f"Q: {h.question}\nA: {h.answer}" for h in history) or "(none)"


@REWRITERS.register("llm")
@attrs.frozen
class LLMRewriter:
    """Fills the entity a sub-question refers to from all earlier questions and answers (§3.3).

    An empty reply keeps the sub-question as it was. Recipe: ``{kind: llm}``.
    """

    prompt_version: int = 1

    def __call__(self, sub_question: str, history: Sequence[SubAnswer], ctx: Context) -> str:
        llm = ctx.require_llm("llm rewriter")
        prompt = load_prompt("rewrite", self.prompt_version)
        reply = llm.complete(prompt.request(question=sub_question, history=history_text(history)))
        rewritten = clean_answer(reply.text)
        return rewritten or sub_question


@SUMMARIZERS.register("llm")
@attrs.frozen
class LLMSummarizer:
    """Summarises an unanswered sub-question's sentences for the next one (§3.3).

    Recipe: ``{kind: llm}``.
    """

    prompt_version: int = 1

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> str:
        llm = ctx.require_llm("llm summarizer")
        prompt = load_prompt("summarize", self.prompt_version)
        reply = llm.complete(prompt.request(question=question, evidence=numbered(evidence)))
        return reply.text.strip()
