"""Protocols of the reasoning stages: decompose, rewrite, answer, integrate, follow up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from chainrag.core.types import Answer, Decomposition, IntegrationInput, SubAnswer, Verdict

if TYPE_CHECKING:
    from chainrag.protocols.context import Context


@runtime_checkable
class Decomposer(Protocol):
    """A question → its sub-questions (ChainRAG §3.3, appendix D)."""

    def __call__(self, question: str, ctx: Context) -> Decomposition: ...


@runtime_checkable
class MultiHopJudge(Protocol):
    """Does the question need more than one hop at all? (the authors' code asks first)."""

    def __call__(self, question: str, ctx: Context) -> Verdict: ...


@runtime_checkable
class RewriteTrigger(Protocol):
    """Does this sub-question need rewriting (does it refer to an earlier answer)? Pure."""

    def __call__(self, sub_question: str) -> bool: ...


@runtime_checkable
class RewriteConfirmer(Protocol):
    """Does a sub-question the trigger fired on really refer to an earlier answer? (the
    authors' code asks the LLM before rewriting). ``ok`` means rewrite; the verdict goes into
    the step's trace."""

    def __call__(
        self, sub_question: str, history: Sequence[SubAnswer], ctx: Context
    ) -> Verdict: ...


@runtime_checkable
class Rewriter(Protocol):
    """A sub-question + all earlier sub-questions and answers → a self-contained question."""

    def __call__(self, sub_question: str, history: Sequence[SubAnswer], ctx: Context) -> str: ...


@runtime_checkable
class Summarizer(Protocol):
    """A question and texts → what the texts say that bears on it: ChainRAG's summary of an
    unanswered sub-question's texts for the next step (§3.3); LongRAG's information extractor
    over the retrieved chunks' source paragraphs (Zhao et al., 2024)."""

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> str: ...


@runtime_checkable
class Answerer(Protocol):
    """A (sub-)question and its evidence → the shortest answer, or "unanswerable"."""

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> SubAnswer: ...


@runtime_checkable
class Integrator(Protocol):
    """Sub-answers and/or all evidence → the final answer (AnsInt, CxtInt; §3.4)."""

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer: ...


@runtime_checkable
class FollowUpWriter(Protocol):
    """A question and what was retrieved so far → one follow-up question (Patwa et al.)."""

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> str: ...
