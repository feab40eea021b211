"""What a method says of how it answers, for whoever reads its trace after the run: the name of
each answer and what its integrator read, how the method decided to rewrite a sub-question,
whether it summarised an unanswered step, and which expander walked.

The method owns these facts (its defaults, the rule that names its answers); the run writes
them into every record (:attr:`~chainrag.core.types.Prediction.notes`, and for a record written
before they were, :func:`chainrag.run.record.upgrade_trace` reads them from the run's stored
recipe), so that the view, the analyses and the claims read them there and restate none.

Layer: core.
"""

from __future__ import annotations

from typing import Literal

import attrs

SubQuestions = Literal["decomposed", "rewritten"]
"""Which sub-questions an integrator read with their sub-answers: as the decomposer gave them,
or as rewritten (where a step was)."""


@attrs.frozen
class Reads:
    """What an integrator reads besides the question (AnsInt's sub-answers, CxtInt's evidence).

    Attributes:
        sub_questions: The sub-questions it reads with their sub-answers (:data:`SubQuestions`);
            None where it reads none.
        word_budget: The most words of evidence it reads; None where it reads no evidence.
        reranker: The registered kind of the reranker that orders its evidence (``none``: the
            retrieval order); None where it reads no evidence.
    """

    sub_questions: SubQuestions | None = None
    word_budget: int | None = None
    reranker: str | None = None


@attrs.frozen
class Integration:
    """One integrator of a method: the answer it gives and what it reads.

    Attributes:
        name: The name of its answer in the records (``ansint``).
        kind: Its registered kind (``ans_int``).
        named: Whether the recipe named the answer (``name:``); else the method named it after
            the kind.
        reads: What it reads (:class:`Reads`).
    """

    name: str
    kind: str
    named: bool = False
    reads: Reads = Reads()


@attrs.frozen
class Rewriting:
    """How a method decides whether to rewrite a sub-question (ChainRAG §3.3): when ``on``,
    after an answered step, when the trigger (its registered kind, and the words it fires on
    where it has words) fires, and with ``confirm`` only when the LLM confirms the sub-question
    refers back."""

    on: bool
    trigger: str
    words: tuple[str, ...] = ()
    confirm: bool = False


@attrs.frozen
class MethodNotes:
    """What a method says of how it answered (see the module docstring).

    Attributes:
        integrations: Its integrators, in the order of its answers.
        rewriting: How it decides to rewrite; None for a method that never rewrites.
        summarizes: Whether an unanswered step's units are summarised for the next step.
        expander: The registered kind of the recipe's expander (the run adds it); None
            without one.
    """

    integrations: tuple[Integration, ...] = ()
    rewriting: Rewriting | None = None
    summarizes: bool = False
    expander: str | None = None

    def integration(self, name: str) -> Integration | None:
        """The integrator that gives the answer ``name``, else None."""
        return next((i for i in self.integrations if i.name == name), None)

    def answer_of(self, kind: str) -> str | None:
        """The name of the answer the first integrator of ``kind`` gives, else None."""
        return next((i.name for i in self.integrations if i.kind == kind), None)
