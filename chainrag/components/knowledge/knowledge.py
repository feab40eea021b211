"""Patwa et al.'s follow-up writer and Shi et al.'s Query Rewriter+ and knowledge filters.

* ``follow_up_writer: llm`` — the question and what was found → one follow-up search question
  (Patwa et al.'s naive/guided iteration and tree retrieval).
* ``query_rewriter: llm_json`` — Query Rewriter+: one call → ``{"Rewritten Question": [...],
  "Query": [...]}``; unusable output (after one repair) falls back to the question itself.
* ``knowledge_filter: llm_nli`` — a few-shot LLM NLI judge per item (premise = the item,
  hypothesis = "it clearly answers the question"); only ``entailment`` is kept. Shi et al. uses a
  LoRA-tuned Gemma-2B as its judge; no NLI model ships offline here, so this is the default.
* ``knowledge_filter: nli_cross_encoder`` — a local NLI cross-encoder folder (e.g. an MNLI
  model), premise = the item, hypothesis = the question turned into a claim of answerability.
* ``knowledge_filter: llm_helps`` — not Shi et al.'s: the same question as a plain yes/no per
  item, for small models that call everything "neutral" under the NLI framing.
* ``knowledge_filter: keep_all`` — no filter (the "w/o filter" ablation).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from chainrag.components.reasoning.answer_form import clean_answer
from chainrag.components.reasoning.decomposers import ask_json
from chainrag.components.retrieval.judges import numbered, parse_yes_no
from chainrag.components.retrieval.rerankers import _minilm_example, cross_encoder
from chainrag.core.device import PLACED, Device
from chainrag.core.types import KnowledgeItem, QueryPlan
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.recipes.registry import FOLLOW_UP_WRITERS, KNOWLEDGE_FILTERS, QUERY_REWRITERS


@FOLLOW_UP_WRITERS.register("llm")
@attrs.frozen
class LLMFollowUp:
    """One follow-up search question for the missing information (Patwa et al.).

    An empty reply falls back to the question itself. Recipe: ``{kind: llm}``.
    """

    prompt_version: int = 1

    def __call__(self, question: str, evidence: Sequence[str], ctx: Context) -> str:
        llm = ctx.require_llm("llm follow-up writer")
        prompt = load_prompt("follow_up", self.prompt_version)
        reply = llm.complete(prompt.request(question=question, evidence=numbered(evidence)))
        return clean_answer(reply.text) or question


def _plan(value: Any) -> QueryPlan:
    if not isinstance(value, dict):
        raise ValueError('expected {"Rewritten Question": [...], "Query": [...]}')

    def strings(key: str) -> tuple[str, ...]:
        items = value.get(key)
        if not isinstance(items, list):
            raise ValueError(f"{key!r} must be a list of strings")
        return tuple(dict.fromkeys(str(i).strip() for i in items if str(i).strip()))

    questions, queries = strings("Rewritten Question"), strings("Query")
    if not queries:
        raise ValueError("'Query' must hold at least one search query")
    return QueryPlan(questions, queries)


@QUERY_REWRITERS.register("llm_json")
@attrs.frozen
class QueryRewriterPlus:
    """Query Rewriter+ (Shi et al.): rewritten questions and up to ``max_queries`` search
    queries from one LLM call; the original question always leads the queries when
    ``keep_question``. Unusable output falls back to the question alone.
    Recipe: ``{kind: llm_json, max_queries: 4, keep_question: true}``.
    """

    max_queries: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    keep_question: bool = True
    prompt_version: int = 1

    def __call__(self, question: str, ctx: Context) -> QueryPlan:
        prompt_id = ("query_plan", self.prompt_version)
        plan, _ = ask_json("llm_json query rewriter", prompt_id, question, ctx, _plan)
        if plan is None:
            return QueryPlan((question,), (question,))
        queries = ((question,) if self.keep_question else ()) + plan.queries
        return QueryPlan(plan.questions, tuple(dict.fromkeys(queries))[: self.max_queries])


_LABEL = re.compile(r"\b(entailment|entails|neutral|neural|contradiction)\b", re.IGNORECASE)


def nli_label(text: str) -> str:
    """The first NLI label in a reply (``neural`` read as neutral); ``unreadable`` if none."""
    match = _LABEL.search(text)
    if match is None:
        return "unreadable"
    word = match.group(1).lower()
    return {"entails": "entailment", "neural": "neutral"}.get(word, word)


@attrs.frozen
class PerItemLLMFilter(abc.ABC):
    """A knowledge filter of one LLM call per item with the prompt ``PROMPT`` at
    ``prompt_version``; keeps the items whose reply :meth:`keeps` accepts, in order."""

    KIND: ClassVar[str]
    PROMPT: ClassVar[str]
    prompt_version: int = 1

    @abc.abstractmethod
    def keeps(self, reply: str) -> bool:
        """Whether the LLM's ``reply`` about an item keeps it."""

    def __call__(
        self, question: str, items: Sequence[KnowledgeItem], ctx: Context
    ) -> tuple[KnowledgeItem, ...]:
        llm = ctx.require_llm(f"{self.KIND} knowledge filter")
        prompt = load_prompt(self.PROMPT, self.prompt_version)
        return tuple(
            item
            for item in items
            if self.keeps(llm.complete(prompt.request(question=question, knowledge=item.text)).text)
        )


@KNOWLEDGE_FILTERS.register("llm_nli")
@attrs.frozen
class LLMNLIFilter(PerItemLLMFilter):
    """Few-shot LLM NLI judge, one call per item; keeps items judged ``entailment`` (an
    unreadable reply counts as not entailed). Recipe: ``{kind: llm_nli}``.
    """

    KIND = "llm_nli"
    PROMPT = "nli"

    def keeps(self, reply: str) -> bool:
        return nli_label(reply) == "entailment"


@KNOWLEDGE_FILTERS.register("llm_helps")
@attrs.frozen
class LLMHelpsFilter(PerItemLLMFilter):
    """Not Shi et al.'s: a yes/no LLM judge per item (does it state the answer, or a fact about
    something the question asks about?); keeps "yes" (an unreadable reply counts as "no").
    For small models that label everything "neutral" under ``llm_nli``'s NLI framing.
    Version 1 (the default) has its worked examples inline and keeps most items, the gold
    ones a little more often; version 2 sends them as earlier chat turns and keeps few, the
    gold ones too (``chainrag experiment filter``, docs/results.md). Recipe:
    ``{kind: llm_helps, prompt_version: 1}``.
    """

    KIND = "llm_helps"
    PROMPT = "helps"

    def keeps(self, reply: str) -> bool:
        return parse_yes_no(reply) is True


def _nli_example() -> dict[str, str]:
    """The offline MiniLM folder (one untrained output; label index 0): for conformance."""
    return {**_minilm_example(), "entailment": "0"}


@KNOWLEDGE_FILTERS.register("nli_cross_encoder", example=_nli_example)
@attrs.frozen
class NLICrossEncoderFilter:
    """An NLI cross-encoder from a local folder: premise = the item, hypothesis = "This
    answers: <question>"; keeps items whose most likely label is ``entailment`` (a label name
    from the model's config, or its index as digits, e.g. "0"). Recipe:
    ``{kind: nli_cross_encoder, model_path: /models/nli-deberta-v3-small}``. ``device``:
    ``auto`` (a GPU when torch sees one), ``cpu`` or ``cuda`` (:mod:`chainrag.core.device`).
    """

    model_path: str
    entailment: str = "entailment"
    batch_size: int = attrs.field(default=16, validator=attrs.validators.ge(1))
    device: Device = attrs.field(default="auto", metadata=PLACED)

    def __call__(
        self, question: str, items: Sequence[KnowledgeItem], ctx: Context
    ) -> tuple[KnowledgeItem, ...]:
        if not items:
            return ()

        model = cross_encoder("nli_cross_encoder", self.model_path, ctx, self.device)
        target = self._label_index(model)
        pairs = [[item.text, f"This answers the question: {question}"] for item in items]
        scores = np.asarray(
            model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        )
        best = scores.argmax(axis=-1) if scores.ndim == 2 else np.zeros(len(items), dtype=int)
        return tuple(item for item, label in zip(items, best, strict=True) if label == target)

    def _label_index(self, model: Any) -> int:
        if self.entailment.isdigit():
            return int(self.entailment)
        labels = {str(v).lower(): int(k) for k, v in model.config.id2label.items()}
        if self.entailment.lower() not in labels:
            raise ValueError(
                f"nli_cross_encoder {self.model_path}: no label {self.entailment!r} among "
                f"{sorted(labels)}; set 'entailment' to the right label name or index"
            )
        return labels[self.entailment.lower()]


@KNOWLEDGE_FILTERS.register("keep_all")
@attrs.frozen
class KeepAll:
    """No filtering: every retrieved item is kept (the "w/o filter" ablation).
    Recipe: ``{kind: keep_all}``."""

    def __call__(
        self, question: str, items: Sequence[KnowledgeItem], ctx: Context
    ) -> tuple[KnowledgeItem, ...]:
        return tuple(items)
