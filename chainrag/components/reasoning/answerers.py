"""Sub-answers (ChainRAG §3.3): the shortest answer from the evidence, and the sufficiency
judge that answers while it judges; LongRAG's generator, over the evidence joined."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs

from chainrag.components.reasoning.answer_form import clean_answer, is_unanswerable
from chainrag.components.retrieval.judges import numbered
from chainrag.core.types import (
    SubAnswer,
    Verdict,
)
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.recipes.registry import (
    ANSWERERS,
    SUFFICIENCY_JUDGES,
)


@ANSWERERS.register("llm_short")
@attrs.frozen
class LLMShortAnswer:
    """The shortest answer from the evidence, or "unanswerable" (ChainRAG's sub-answer).

    Recipe: ``{kind: llm_short, prompt: answer_sub, prompt_version: 2}`` (``cxtint`` answers
    without the unanswerable option, as the baselines do). ``answer_sub@v2`` shares its prefix
    with the sufficiency judge's ``sufficiency@v2``: after the last check, the server's prompt
    cache already holds the evidence (bench/llm_speed.py: about a minute saved per sub-question
    with the 1.5B model on 2 cores).
    """

    prompt: str = "answer_sub"
    prompt_version: int = 1

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> SubAnswer:
        llm = ctx.require_llm("llm_short answerer")
        template = load_prompt(self.prompt, self.prompt_version)
        reply = llm.complete(template.request(question=question, evidence=numbered(evidence)))
        answer = clean_answer(reply.text)
        return SubAnswer(question, answer, not is_unanswerable(answer))


@ANSWERERS.register("llm_joined")
@attrs.frozen
class JoinedAnswer:
    """The answer from the evidence joined with ``separator`` (LongRAG's generator).

    LongRAG's generator (Zhao et al., 2024) reads the kept chunks and the extracted
    information joined with none (``longrag_answer``, LongBench's prompt for its multi-hop
    sets, up to 32 tokens). The reply is cleaned as every short answer is.

    Recipe: ``{kind: llm_joined, prompt: longrag_answer}``.
    """

    prompt: str = "longrag_answer"
    prompt_version: int = 1
    separator: str = ""

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> SubAnswer:
        llm = ctx.require_llm("llm_joined answerer")
        template = load_prompt(self.prompt, self.prompt_version)
        evidence_text = self.separator.join(evidence)
        reply = llm.complete(template.request(question=question, evidence=evidence_text))
        answer = clean_answer(reply.text)
        return SubAnswer(question, answer, not is_unanswerable(answer))


@SUFFICIENCY_JUDGES.register("llm_answerable")
@attrs.frozen
class LLMAnswerable:
    """A sufficiency judge that tries: it asks for the sub-answer (``answer_sub``) and counts
    the evidence as sufficient unless the reply is "unanswerable".

    Not the paper's judgement (§3.2 asks the LLM whether the sentences suffice; that is
    ``llm_yes_no``). It exists because a small model answers that question "yes" to nearly
    anything: ``chainrag experiment judge`` measures how well a judge tells the gold paragraphs
    from distractors. Its request is exactly the sub-answer's, so after the last check the
    server's prompt cache holds the whole prompt. Its verdict carries the cleaned sub-answer
    (``Verdict.answer``), so ChainRAG's ``answer_from_judge`` can take it instead of asking
    again.
    Recipe: ``{kind: llm_answerable}``.
    """

    answers: ClassVar[bool] = True
    """Its verdicts carry the sub-answer (``Verdict.answer``, what ``answer_from_judge`` reads)."""

    prompt_version: int = 2

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> Verdict:
        answer = LLMShortAnswer("answer_sub", self.prompt_version)(question, evidence, ctx)
        return Verdict(ok=answer.answered, raw=answer.answer, answer=answer.answer)
