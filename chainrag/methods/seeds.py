"""The methods of the two related papers, over the same index, retrieval and answerer stages.

Patwa et al. (LM-guided retrieval; passages as units, ``recipes/index/passages.yaml``):

* ``naive_iteration`` — retrieve 4; from the question and the top passage the LLM writes one
  follow-up question; retrieve 4 for it; answer from the top 2 of each round.
* ``guided_iteration`` — retrieve 4 and answer; ask whether the top 2 passages support that
  answer (the LLM reasons, then ends with yes or no; verdict = the last standalone yes/no); if
  not, do the follow-up round and answer again from 2 + 2; else (or when the reply has no
  verdict, as the authors' code keeps the answer then) keep the first answer and its context.
* ``tree`` — retrieve; for each of the top 3 passages a one-hop follow-up question; retrieve 2
  new passages for each; a branch = the passage + its 2; answer from the 3 branches.

Each step's ``retrieved`` is the units the method put into its final context, so Hit@4 and
Recall@k score the context the answer was read from.

Shi et al. (``four_module``): Query Rewriter+ → for each search query, the retrieval trigger
over the knowledge reservoir (stored titles) → memory, or retrieval → the knowledge filter on
what was retrieved → the reader; what the filter kept is written back, title → content
(docs/decisions.md; the authors' code never writes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs

from chainrag.components.knowledge.cache_triggers import Popularity
from chainrag.components.knowledge.knowledge import LLMFollowUp, LLMNLIFilter, QueryRewriterPlus
from chainrag.components.reasoning.answerers import LLMShortAnswer
from chainrag.components.retrieval.judges import numbered
from chainrag.core.paths import cache_root
from chainrag.core.types import (
    Answer,
    KnowledgeItem,
    NamedAnswer,
    Prediction,
    QAExample,
    QueryPlan,
    StepTrace,
    SubAnswer,
)
from chainrag.index.graph import units_of
from chainrag.index.reservoir import Reservoir
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.knowledge import CacheTrigger, KnowledgeFilter, QueryRewriter
from chainrag.protocols.reasoning import Answerer, FollowUpWriter
from chainrag.recipes.registry import METHODS

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def last_yes_no(text: str) -> bool | None:
    """The verdict of a reply: its last standalone yes/no (None if it has none)."""
    found = _YES_NO.findall(text)
    return None if not found else found[-1].lower() == "yes"


def _fresh(units: Sequence[int], taken: Sequence[int], n: int) -> tuple[int, ...]:
    """The first ``n`` of ``units`` not in ``taken``."""
    seen = set(taken)
    return tuple(u for u in units if u not in seen)[:n]


def follow_up_step(
    follow_up: FollowUpWriter,
    question: str,
    guide: Sequence[int],
    taken: Sequence[int],
    n: int,
    ctx: Context,
) -> StepTrace:
    """One follow-up hop of Patwa et al.: a follow-up question written from the ``guide`` units,
    a retrieval for it, and its first ``n`` units not in ``taken``; the hop's step, with the
    LLM usage it took."""
    before = ctx.usage()
    follow = follow_up(question, ctx.texts(guide), ctx)
    fresh = _fresh(ctx.retrieve(follow).units, taken, n)
    return StepTrace(follow, None, fresh, usage=ctx.usage() - before)


def _cxtint() -> Answerer:
    return LLMShortAnswer(prompt="cxtint")


@attrs.frozen
class FollowUpMethod:
    """Patwa et al.'s methods' shared parts: the follow-up question writer and the answerer (the
    CxtInt prompt over the passages gathered)."""

    follow_up: FollowUpWriter = attrs.field(factory=LLMFollowUp)
    answerer: Answerer = attrs.field(factory=_cxtint)


@METHODS.register("naive_iteration")
@attrs.frozen
class NaiveIteration(FollowUpMethod):
    """Patwa et al.'s naive iteration: a follow-up question from the top passage, a second
    retrieval, an answer from ``keep`` passages of each round.
    Recipe: ``{kind: naive_iteration, first: 4, keep: 2}``.
    """

    keep: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    guide_with: int = attrs.field(default=1, validator=attrs.validators.ge(1))

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        first = ctx.retrieve(example.question).units
        steps, context = self.follow_up_round(example.question, first, ctx)
        answer = self.answerer(example.question, ctx.texts(context), ctx)
        return Prediction((NamedAnswer("naive_iteration", Answer(answer.answer)),), steps)

    def follow_up_round(
        self, question: str, first: Sequence[int], ctx: Context
    ) -> tuple[tuple[StepTrace, ...], tuple[int, ...]]:
        """The follow-up round after ``first``: its steps and the 2 + 2 context."""
        kept_first = tuple(first[: self.keep])
        guide = first[: self.guide_with]
        hop = follow_up_step(self.follow_up, question, guide, kept_first, self.keep, ctx)
        return (StepTrace(question, None, kept_first), hop), kept_first + hop.retrieved


@METHODS.register("guided_iteration")
@attrs.frozen
class GuidedIteration(FollowUpMethod):
    """Patwa et al.'s guided iteration: answer from the first retrieval; if the LLM says the top
    ``check_with`` passages do not support that answer, do naive iteration's follow-up round
    and answer again. A reply without a verdict keeps the answer (``unreadable: iterate``
    iterates instead). ``prompt_version: 1`` asks for one word, without reasoning.
    Recipe: ``{kind: guided_iteration, keep: 2, check_with: 2}``.
    """

    keep: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    check_with: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    unreadable: Literal["keep", "iterate"] = "keep"
    prompt_version: int = 2

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        first = ctx.retrieve(question).units
        evidence = ctx.texts(first)
        answer = self.answerer(question, evidence, ctx)
        llm = ctx.require_llm("guided_iteration support check")
        prompt = load_prompt("supports", self.prompt_version)
        checked = numbered(evidence[: self.check_with])
        reply = llm.complete(
            prompt.request(question=question, answer=answer.answer, evidence=checked)
        )
        verdict = last_yes_no(reply.text)
        if verdict is None:
            verdict = self.unreadable == "keep"
        if answer.answered and verdict:
            step = StepTrace(question, None, tuple(first), answer=answer, usage=ctx.usage())
            return Prediction((NamedAnswer("guided_iteration", Answer(answer.answer)),), (step,))
        iteration = NaiveIteration(self.follow_up, self.answerer, self.keep)
        steps, context = iteration.follow_up_round(question, first, ctx)
        final = self.answerer(question, ctx.texts(context), ctx)
        rejected = SubAnswer(question, answer.answer, answered=False)  # judged unsupported
        steps = (attrs.evolve(steps[0], answer=rejected), *steps[1:])
        return Prediction((NamedAnswer("guided_iteration", Answer(final.answer)),), steps)


@METHODS.register("tree")
@attrs.frozen
class TreeRetrieval(FollowUpMethod):
    """Patwa et al.'s tree retrieval: for each of the top ``branches`` passages a one-hop
    follow-up question and ``per_branch`` new passages; the answer reads the branches.
    Recipe: ``{kind: tree, branches: 3, per_branch: 2}``.
    """

    branches: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    per_branch: int = attrs.field(default=2, validator=attrs.validators.ge(1))

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        roots = ctx.retrieve(question).units[: self.branches]
        steps: list[StepTrace] = []
        context: list[int] = []
        for root in roots:
            hop = follow_up_step(self.follow_up, question, [root], [root], self.per_branch, ctx)
            branch = (root, *hop.retrieved)
            steps.append(attrs.evolve(hop, retrieved=branch))
            context.extend(u for u in branch if u not in context)
        answer = self.answerer(question, ctx.texts(context), ctx)
        return Prediction((NamedAnswer("tree", Answer(answer.answer)),), tuple(steps))


@METHODS.register("four_module")
@attrs.frozen
class FourModule:
    """Shi et al.: Query Rewriter+, a retrieval trigger over a knowledge reservoir, a knowledge
    filter, a reader.

    For every search query of the rewriter: if at least ``popularity`` stored items have a
    title with cosine ≥ τ to the query (the trigger), those items are its knowledge and
    nothing is retrieved for it; otherwise its top ``per_query`` units are retrieved. The
    retrieved items (merged over queries) go through the filter, and only what it keeps is
    written back, title → content. The reader answers the first rewritten question
    (``read: rewritten``, the seed's) or the original one (``read: original``) from the
    memory items and the kept items. When the filter keeps nothing, the reader gets no
    retrieved text (``fallback_unfiltered: true`` gives it the unfiltered items instead,
    which are still never stored). ``reservoir`` is a SQLite file (relative paths are under
    ``$CHAINRAG_CACHE``), or null for no memory (three modules).
    Recipe: ``{kind: four_module, reservoir: reservoir/four_module.sqlite, per_query: 5}``.
    """

    query_rewriter: QueryRewriter | None = attrs.field(factory=QueryRewriterPlus)
    knowledge_filter: KnowledgeFilter | None = attrs.field(factory=LLMNLIFilter)
    trigger: CacheTrigger = attrs.field(factory=Popularity)
    reservoir: str | None = None
    answerer: Answerer = attrs.field(factory=_cxtint)
    per_query: int = attrs.field(default=5, validator=attrs.validators.ge(1))
    read: Literal["rewritten", "original"] = "rewritten"
    fallback_unfiltered: bool = False

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        plan = (
            self.query_rewriter(question, ctx)
            if self.query_rewriter is not None
            else QueryPlan((question,), (question,))
        )
        steps: list[StepTrace] = []
        memory = self._reservoir(ctx)
        index = ctx.require_index()
        embedder = repr(index.embedder)
        remembered: list[KnowledgeItem] = []
        to_retrieve = list(plan.queries)
        if memory is not None:
            vectors = index.embedder(list(plan.queries), ctx, role="query")
            to_retrieve = []
            floor = self.trigger.threshold
            for query, vector in zip(plan.queries, vectors, strict=True):
                match = memory.match(vector, embedder=embedder)
                if self.trigger(match):
                    remembered += [i for i, s in zip(match.items, match.similarities, strict=True)
                                   if s >= floor]  # fmt: skip
                    steps.append(StepTrace(query, from_memory=True))
                else:
                    to_retrieve.append(query)
        retrieved = self._retrieve(to_retrieve, steps, ctx)
        kept = list(retrieved)
        if self.knowledge_filter is not None and retrieved:
            kept = list(self.knowledge_filter(question, retrieved, ctx))
            chosen = {i.source for i in kept}
            steps = [
                attrs.evolve(s, kept=tuple(u for u in s.retrieved if u in chosen))
                if s.retrieved else s
                for s in steps
            ]  # fmt: skip
        if memory is not None and kept:  # what the filter kept; never the fallback below
            titles = [i.title or i.text for i in kept]
            memory.add(kept, index.embedder(titles, ctx, role="passage"), embedder=embedder)
        if not kept and self.fallback_unfiltered:
            kept = list(retrieved)
        reader = plan.questions[0] if self.read == "rewritten" and plan.questions else question
        knowledge = list({i.text: i for i in [*remembered, *kept]}.values())
        answer = self.answerer(reader, [i.text for i in knowledge], ctx)
        return Prediction(
            (NamedAnswer("four_module", Answer(answer.answer)),),
            tuple(steps),
            read=reader if reader != question else None,
        )

    def _retrieve(
        self, queries: Sequence[str], steps: list[StepTrace], ctx: Context
    ) -> list[KnowledgeItem]:
        items: dict[int, KnowledgeItem] = {}
        index = ctx.require_index()
        units = units_of(index)
        for query in queries:
            found = ctx.retrieve(query).units[: self.per_query]
            steps.append(StepTrace(query, None, found))
            for u in found:
                items.setdefault(u, KnowledgeItem(index.texts[u], units[u].title, source=u))
        return list(items.values())

    def state_in(self, path: str | None) -> FourModule:
        """This method with its reservoir at ``path`` (None: no reservoir, always retrieving)."""
        return attrs.evolve(self, reservoir=path)

    def run_state(self, ctx: Context) -> ReservoirState | None:
        """The reservoir as the run's cross-question state (None without one)."""
        reservoir = self._reservoir(ctx)
        return ReservoirState(reservoir) if reservoir is not None else None

    def _reservoir(self, ctx: Context) -> Reservoir | None:
        if self.reservoir is None:
            return None
        path = Path(self.reservoir).expanduser()
        path = path if path.is_absolute() else cache_root() / path
        return ctx.models.get(("reservoir", str(path)), lambda: Reservoir(path))


@attrs.frozen
class ReservoirState:
    """A knowledge reservoir as a run's cross-question state: its marker is the newest item's
    id; rolling back removes the items added after one."""

    reservoir: Reservoir
    name: str = "reservoir"

    def marker(self) -> int:
        return self.reservoir.last_id()

    def rollback(self, marker: int) -> None:
        self.reservoir.remove_after(marker)
