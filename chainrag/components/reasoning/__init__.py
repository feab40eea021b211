"""LLM reasoning stages (ChainRAG §3.3-3.4): decomposition, rewriting, sub-answers, integration;
LongRAG's extractor and generator.

Modules:
    ``decomposers``: question decomposition and the multi-hop judge.
    ``rewrite_triggers``: pronoun-triggered rewriting's triggers and confirmers.
    ``sub_questions``: the rewriter and the summarizer.
    ``extractors``: LongRAG's information extractor (a summarizer) and its source paragraphs.
    ``answerers``: sub-question answerers.
    ``integrators``: AnsInt and CxtInt.
    ``choosers``: choosing between the integrations' answers.
    ``comparisons``: comparison questions decided by rule.
    ``answer_form``: an answer read out of a reply, and the form a question asks for.

Protocols: :mod:`chainrag.protocols.reasoning`.
"""

from chainrag.components.reasoning import (
    answer_form,
    answerers,
    choosers,
    comparisons,
    decomposers,
    extractors,
    integrators,
    rewrite_triggers,
    sub_questions,
)

__all__ = [
    "answer_form",
    "answerers",
    "choosers",
    "comparisons",
    "decomposers",
    "extractors",
    "integrators",
    "rewrite_triggers",
    "sub_questions",
]
