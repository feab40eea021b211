"""Rewrite triggers: does a sub-question refer to an earlier answer? (ChainRAG §3.3). The
confirmation the authors' code asks of the LLM after a trigger fires, and the rewriter that
needs no LLM where the decomposition numbered its references (``#1``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs

from chainrag.components.reasoning.sub_questions import LLMRewriter, history_text
from chainrag.core.types import SubAnswer, Verdict
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.reasoning import Rewriter
from chainrag.recipes.registry import REWRITE_CONFIRMERS, REWRITE_TRIGGERS, REWRITERS

PRONOUNS_AND_DEMONSTRATIVES = (
    "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs",
    "this", "that", "these", "those",
)  # fmt: skip
"""Default trigger words: personal/possessive pronouns and demonstratives."""


def _words(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(w.lower() for w in value)


def _non_empty(_: object, a: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    if not value or any(not w.strip() for w in value):
        raise ValueError(f"'{a.name}' must be a non-empty list of non-empty words")


def has_whole_word(text: str, words: Iterable[str]) -> bool:
    """True if any of ``words`` occurs in ``text`` as a whole word, ignoring case."""
    tokens = set(re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()))
    return any(w in tokens for w in words)


def has_substring(text: str, words: Iterable[str]) -> bool:
    """True if any of ``words`` occurs anywhere in ``text``, ignoring case."""
    lowered = text.lower()
    return any(w in lowered for w in words)


NUMBERED_REFERENCE = re.compile(r"#(\d+)\b")
"""``#1``, ``#2``, …: a sub-question's reference to the answer of an earlier one, by number."""


def has_numbered_reference(text: str) -> bool:
    """True if ``text`` refers to an earlier sub-question's answer as ``#n``."""
    return NUMBERED_REFERENCE.search(text) is not None


@REWRITE_TRIGGERS.register("pronoun_words")
@attrs.frozen
class PronounWords:
    """Fires when the sub-question contains a pronoun or demonstrative as a whole word.

    ChainRAG §3.3 (the paper's rule; the default). Recipe: ``{kind: pronoun_words}``.
    ``numbered: true`` (not the paper's) also fires on a numbered reference to an earlier
    answer (``#1``), as ``decompose@v3`` writes them for the ``numbered`` rewriter.
    """

    words: tuple[str, ...] = attrs.field(
        default=PRONOUNS_AND_DEMONSTRATIVES, converter=_words, validator=_non_empty
    )
    numbered: bool = False

    def __call__(self, sub_question: str) -> bool:
        if self.numbered and has_numbered_reference(sub_question):
            return True
        return has_whole_word(sub_question, self.words)


@REWRITE_TRIGGERS.register("substring")
@attrs.frozen
class Substring:
    """Fires when any trigger word occurs as a substring, as the authors' code tests it.

    So "the" (contains "he") and "city" (contains "it") fire too; use it only to reproduce that
    code. Recipe: ``{kind: substring}``.
    """

    words: tuple[str, ...] = attrs.field(
        default=PRONOUNS_AND_DEMONSTRATIVES, converter=_words, validator=_non_empty
    )

    def __call__(self, sub_question: str) -> bool:
        return has_substring(sub_question, self.words)


def resolve_numbered(sub_question: str, history: Sequence[SubAnswer]) -> str:
    """``sub_question`` with each ``#n`` replaced by step n's answer; by ``(the answer to: …)``
    with step n's question where that step was unanswered; left as it is where there is no
    step n (a reference to a later or missing sub-question)."""

    def fill(match: re.Match[str]) -> str:
        n = int(match.group(1))
        if not 1 <= n <= len(history):
            return match.group(0)
        step = history[n - 1]
        return step.answer if step.answered else f"(the answer to: {step.question.rstrip('?')})"

    return NUMBERED_REFERENCE.sub(fill, sub_question)


@REWRITE_CONFIRMERS.register("llm_refers_back")
@attrs.frozen
class LLMRefersBack:
    """Asks the LLM whether the sub-question refers to an earlier answer (prompt
    ``refers_back``, with the earlier questions and answers); only a reply that is exactly
    "yes" (any case, spaces aside) confirms, as in the authors' code. The reply is the
    verdict's ``raw``. Recipe: ``{kind: llm_refers_back}``.
    """

    prompt_version: int = 1

    def __call__(self, sub_question: str, history: Sequence[SubAnswer], ctx: Context) -> Verdict:
        llm = ctx.require_llm("llm_refers_back rewrite confirmation")
        prompt = load_prompt("refers_back", self.prompt_version)
        reply = llm.complete(prompt.request(question=sub_question, history=history_text(history)))
        return Verdict(ok=reply.text.strip().lower() == "yes", raw=reply.text)


@REWRITERS.register("numbered")
@attrs.frozen
class NumberedReferences:
    """Fills a sub-question's numbered references (``Where was #1 born?``) with the earlier
    answers, by string substitution: no LLM call. Not the paper's (§3.3 rewrites with the LLM);
    made for ``decompose@v3``, which numbers the references, where the local 1.5B rewriter left
    "this river" unfilled. A sub-question without one (the decomposer did not number it) goes
    to ``fallback`` (the paper's LLM rewriter; ``null`` leaves it unchanged). ChainRAG calls a
    rewriter only when its trigger fires (``{kind: pronoun_words, numbered: true}``) and the
    previous step was answered, so a reference after an unanswered step stays ``#n``, as a
    pronoun does there in the paper. Recipe: ``{kind: numbered}``.
    """

    fallback: Rewriter | None = attrs.field(factory=LLMRewriter)

    def __call__(self, sub_question: str, history: Sequence[SubAnswer], ctx: Context) -> str:
        if has_numbered_reference(sub_question):
            return resolve_numbered(sub_question, history)
        if self.fallback is None:
            return sub_question
        return self.fallback(sub_question, history, ctx)
