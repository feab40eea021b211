"""The methods of the two related papers, over the same index, retrieval and answerer stages.

Seed 002 (LM-guided retrieval; passages as units, ``recipes/index/passages.yaml``):

* ``naive_iteration`` — retrieve 4; from the question and the top passage the LLM writes one
  follow-up question; retrieve 4 for it; answer from the top 2 of each round.
* ``guided_iteration`` — retrieve 4 and answer; ask whether the passages support that answer
  (verdict = the last standalone yes/no of the reply); if not, do the follow-up round and
  answer again from 2 + 2; else keep the first answer and its context.
* ``tree`` — retrieve; for each of the top 3 passages a one-hop follow-up question; retrieve 2
  new passages for each; a branch = the passage + its 2; answer from the 3 branches.

Each step's ``retrieved`` is the units the method put into its final context, so Hit@4 and
Recall@k score the context the answer was read from.

Seed 004 (``four_module``): Query Rewriter+ → retrieval trigger over the knowledge reservoir →
(memory, or retrieval for every query, merged) → knowledge filter → reader; what was retrieved
and kept is written back to the reservoir (method.md; the authors' code never writes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from chainrag.components.cache_triggers import Popularity
from chainrag.components.judges import numbered
from chainrag.components.knowledge import LLMFollowUp, LLMNLIFilter, QueryRewriterPlus
from chainrag.components.methods import minus, retrieve, texts_of, used
from chainrag.components.reasoning import LLMShortAnswer
from chainrag.context import Context
from chainrag.graph import units_of
from chainrag.llm.prompts import load_prompt
from chainrag.paths import cache_root
from chainrag.protocols.knowledge import CacheTrigger, KnowledgeFilter, QueryRewriter
from chainrag.protocols.reasoning import Answerer, FollowUpWriter
from chainrag.registry import METHODS
from chainrag.reservoir import Reservoir
from chainrag.types import (
    Answer,
    KnowledgeItem,
    NamedAnswer,
    Prediction,
    QAExample,
    QueryPlan,
    StepTrace,
    SubAnswer,
)

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def last_yes_no(text: str) -> bool | None:
    """The verdict of a reply: its last standalone yes/no (None if it has none)."""
    found = _YES_NO.findall(text)
    return None if not found else found[-1].lower() == "yes"


def _fresh(units: Sequence[int], taken: Sequence[int], n: int) -> tuple[int, ...]:
    """The first ``n`` of ``units`` not in ``taken``."""
    seen = set(taken)
    return tuple(u for u in units if u not in seen)[:n]


def _cxtint() -> Answerer:
    return LLMShortAnswer(prompt="cxtint")


@METHODS.register("naive_iteration")
@attrs.frozen
class NaiveIteration:
    """Seed 002's naive iteration: a follow-up question from the top passage, a second
    retrieval, an answer from ``keep`` passages of each round.
    Recipe: ``{kind: naive_iteration, first: 4, keep: 2}``.
    """

    follow_up: FollowUpWriter = attrs.field(factory=LLMFollowUp)
    answerer: Answerer = attrs.field(factory=_cxtint)
    keep: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    guide_with: int = attrs.field(default=1, validator=attrs.validators.ge(1))

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        first = retrieve(example.question, ctx).units
        steps, context = self.follow_up_round(example.question, first, ctx)
        answer = self.answerer(example.question, texts_of(context, ctx), ctx)
        return Prediction((NamedAnswer("naive_iteration", Answer(answer.answer)),), steps)

    def follow_up_round(
        self, question: str, first: Sequence[int], ctx: Context
    ) -> tuple[tuple[StepTrace, ...], tuple[int, ...]]:
        """The follow-up round after ``first``: its steps and the 2 + 2 context."""
        before = used(ctx)
        follow = self.follow_up(question, texts_of(first[: self.guide_with], ctx), ctx)
        second = retrieve(follow, ctx).units
        kept_first = tuple(first[: self.keep])
        kept_second = _fresh(second, kept_first, self.keep)
        steps = (
            StepTrace(question, None, kept_first),
            StepTrace(follow, None, kept_second, usage=minus(used(ctx), before)),
        )
        return steps, kept_first + kept_second


@METHODS.register("guided_iteration")
@attrs.frozen
class GuidedIteration:
    """Seed 002's guided iteration: answer from the first retrieval; if the LLM says the
    passages do not support that answer, do naive iteration's follow-up round and answer
    again. Recipe: ``{kind: guided_iteration, keep: 2}``.
    """

    follow_up: FollowUpWriter = attrs.field(factory=LLMFollowUp)
    answerer: Answerer = attrs.field(factory=_cxtint)
    keep: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    prompt_version: int = 1

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        first = retrieve(question, ctx).units
        evidence = texts_of(first, ctx)
        answer = self.answerer(question, evidence, ctx)
        llm = ctx.require_llm("guided_iteration support check")
        prompt = load_prompt("supports", self.prompt_version)
        reply = llm.complete(
            prompt.request(question=question, answer=answer.answer, evidence=numbered(evidence))
        )
        if answer.answered and last_yes_no(reply.text) is True:
            step = StepTrace(question, None, tuple(first), answer=answer, usage=used(ctx))
            return Prediction((NamedAnswer("guided_iteration", Answer(answer.answer)),), (step,))
        iteration = NaiveIteration(self.follow_up, self.answerer, self.keep)
        steps, context = iteration.follow_up_round(question, first, ctx)
        final = self.answerer(question, texts_of(context, ctx), ctx)
        rejected = SubAnswer(question, answer.answer, answered=False)  # judged unsupported
        steps = (attrs.evolve(steps[0], answer=rejected), *steps[1:])
        return Prediction((NamedAnswer("guided_iteration", Answer(final.answer)),), steps)


@METHODS.register("tree")
@attrs.frozen
class TreeRetrieval:
    """Seed 002's tree retrieval: for each of the top ``branches`` passages a one-hop
    follow-up question and ``per_branch`` new passages; the answer reads the branches.
    Recipe: ``{kind: tree, branches: 3, per_branch: 2}``.
    """

    follow_up: FollowUpWriter = attrs.field(factory=LLMFollowUp)
    answerer: Answerer = attrs.field(factory=_cxtint)
    branches: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    per_branch: int = attrs.field(default=2, validator=attrs.validators.ge(1))

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        roots = retrieve(question, ctx).units[: self.branches]
        steps: list[StepTrace] = []
        context: list[int] = []
        for root in roots:
            before = used(ctx)
            follow = self.follow_up(question, texts_of([root], ctx), ctx)
            grown = _fresh(retrieve(follow, ctx).units, [root], self.per_branch)
            branch = (root, *grown)
            steps.append(StepTrace(follow, None, branch, usage=minus(used(ctx), before)))
            context.extend(u for u in branch if u not in context)
        answer = self.answerer(question, texts_of(context, ctx), ctx)
        return Prediction((NamedAnswer("tree", Answer(answer.answer)),), tuple(steps))


MEMORY = "memory: "
"""Prefix of the step that answered from the reservoir instead of retrieving."""


@METHODS.register("four_module")
@attrs.frozen
class FourModule:
    """Seed 004: Query Rewriter+, a retrieval trigger over a knowledge reservoir, a knowledge
    filter, a reader. ``reservoir`` is a SQLite file (relative paths are under
    ``$CHAINRAG_CACHE``), or null for no memory (three modules). When the trigger fires, the
    stored items with cosine ≥ the trigger's threshold are the knowledge and nothing is
    retrieved; otherwise the top ``per_query`` units of every query are merged, filtered and
    written back. ``fallback_unfiltered`` answers from the unfiltered items when the filter
    keeps none. Recipe: ``{kind: four_module, reservoir: reservoir/four_module.sqlite}``.
    """

    query_rewriter: QueryRewriter | None = attrs.field(factory=QueryRewriterPlus)
    knowledge_filter: KnowledgeFilter | None = attrs.field(factory=LLMNLIFilter)
    trigger: CacheTrigger = attrs.field(factory=Popularity)
    reservoir: str | None = None
    answerer: Answerer = attrs.field(factory=_cxtint)
    per_query: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    fallback_unfiltered: bool = True

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        plan = (
            self.query_rewriter(question, ctx)
            if self.query_rewriter is not None
            else QueryPlan((question,), (question,))
        )
        steps: list[StepTrace] = []
        memory = self._reservoir(ctx)
        key: np.ndarray | None = None
        embedder = repr(ctx.index.embedder)
        if memory is not None:
            key = ctx.index.embedder([question], ctx, role="query")[0]
            match = memory.match(key, embedder=embedder)
            if self.trigger(match):
                floor = float(getattr(self.trigger, "threshold", -1.0))
                items = [i for i, s in zip(match.items, match.similarities, strict=True)
                         if s >= floor]  # fmt: skip
                steps.append(StepTrace(MEMORY + question))
                return self._answer(question, items, steps, ctx)
        items = self._retrieve(plan, steps, ctx)
        kept = list(items)
        if self.knowledge_filter is not None:
            kept = list(self.knowledge_filter(question, items, ctx))
            if not kept and self.fallback_unfiltered:
                kept = list(items)
        if memory is not None and key is not None and kept:
            memory.add(question, kept, key, embedder=embedder)
        return self._answer(question, kept, steps, ctx)

    def _retrieve(
        self, plan: QueryPlan, steps: list[StepTrace], ctx: Context
    ) -> list[KnowledgeItem]:
        items: dict[int, KnowledgeItem] = {}
        units = units_of(ctx.index)
        for query in plan.queries:
            found = retrieve(query, ctx).units[: self.per_query]
            steps.append(StepTrace(query, None, found))
            for u in found:
                items.setdefault(u, KnowledgeItem(ctx.index.texts[u], units[u].title, source=u))
        return list(items.values())

    def _answer(
        self, question: str, items: Sequence[KnowledgeItem], steps: list[StepTrace], ctx: Context
    ) -> Prediction:
        answer = self.answerer(question, [i.text for i in items], ctx)
        return Prediction((NamedAnswer("four_module", Answer(answer.answer)),), tuple(steps))

    def _reservoir(self, ctx: Context) -> Reservoir | None:
        if self.reservoir is None:
            return None
        path = Path(self.reservoir).expanduser()
        path = path if path.is_absolute() else cache_root() / path
        return ctx.models.get(("reservoir", str(path)), lambda: Reservoir(path))
