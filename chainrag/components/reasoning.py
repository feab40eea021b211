"""LLM reasoning stages (ChainRAG §3.3–3.4), by the names they had when they were one module.

Each stage kind now has its own module: :mod:`~chainrag.components.decomposers`,
:mod:`~chainrag.components.sub_questions` (rewrite, summarise),
:mod:`~chainrag.components.answerers` (sub-answers, the judge that answers),
:mod:`~chainrag.components.integrators` (AnsInt, CxtInt), :mod:`~chainrag.components.choosers`
(``form_checked``, ``choose``) and :mod:`~chainrag.components.answer_form` (an answer read out
of a reply, and the form a question asks for). This module names them all, so that code
written against ``chainrag.components.reasoning`` (plugins, notebooks) keeps working; the
registry keys are the same.
"""

from __future__ import annotations

from chainrag.components.answer_form import (
    clean_answer,
    final_answer,
    is_unanswerable,
    misfit,
    stated_answer,
)
from chainrag.components.answerers import LLMAnswerable, LLMShortAnswer
from chainrag.components.choosers import (
    NO_PASSAGES,
    Choose,
    FormChecked,
    letter_share,
    mentions,
    naming_evidence,
    picked,
)
from chainrag.components.decomposers import LLMDecomposer, LLMMultiHopJudge, ask_json
from chainrag.components.integrators import ANSWER_NAME, AnsInt, CxtInt, answer_name_ok, as_passages
from chainrag.components.sub_questions import LLMRewriter, LLMSummarizer, history_text

__all__ = [
    "ANSWER_NAME",
    "NO_PASSAGES",
    "AnsInt",
    "Choose",
    "CxtInt",
    "FormChecked",
    "LLMAnswerable",
    "LLMDecomposer",
    "LLMMultiHopJudge",
    "LLMRewriter",
    "LLMShortAnswer",
    "LLMSummarizer",
    "answer_name_ok",
    "as_passages",
    "ask_json",
    "clean_answer",
    "final_answer",
    "history_text",
    "is_unanswerable",
    "letter_share",
    "mentions",
    "misfit",
    "naming_evidence",
    "picked",
    "stated_answer",
]
