"""Methods: one question in, answers and a typed trace out — each one short, readable flow.

A method retrieves through its context (``ctx.retrieve``: the recipe's retrieval stages on
the index built for the question) and reads the LLM usage there (``ctx.usage``); the runner
(:mod:`chainrag.runner`) prepares both. ``chainrag`` is the paper's flow (§3.2–3.4);
``naive``, ``naive_qd`` and ``iter_retgen`` are the baselines it compares against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from chainrag.components.reasoning.answer_form import final_answer, is_unanswerable, stated_answer
from chainrag.components.reasoning.answerers import LLMShortAnswer
from chainrag.components.reasoning.decomposers import LLMDecomposer
from chainrag.components.reasoning.integrators import AnsInt, CxtInt
from chainrag.components.reasoning.rewrite_triggers import LLMRefersBack, PronounWords
from chainrag.components.reasoning.sub_questions import LLMRewriter, LLMSummarizer
from chainrag.components.retrieval.judges import numbered
from chainrag.core.context import Context
from chainrag.core.notes import Integration, MethodNotes, Reads, Rewriting
from chainrag.core.types import (
    Answer,
    Decomposition,
    Expansion,
    IntegrationInput,
    NamedAnswer,
    Prediction,
    QAExample,
    StepTrace,
    SubAnswer,
    Verdict,
)
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.parts import AnsweringJudge, Named, Reading, Worded
from chainrag.protocols.reasoning import (
    Answerer,
    Decomposer,
    Integrator,
    MultiHopJudge,
    RewriteConfirmer,
    Rewriter,
    RewriteTrigger,
    Summarizer,
)
from chainrag.recipes.registry import METHODS, kind_of, registered_key

if TYPE_CHECKING:
    from chainrag.recipes.recipe import Recipe


def answer_name(integrator: Integrator) -> str:
    """The name of the answer ``integrator`` gives: its ``name`` where the recipe gives one,
    else its registered kind without ``_`` (``ans_int`` → ``ansint``)."""
    if isinstance(integrator, Named) and integrator.name is not None:
        return integrator.name
    found = registered_key(type(integrator))
    return found[1].replace("_", "") if found else type(integrator).__name__.lower()


def integration(integrator: Integrator) -> Integration:
    """What the records say of ``integrator``: its answer's name, its kind, whether the recipe
    named the answer, and what it reads."""
    named = isinstance(integrator, Named) and integrator.name is not None
    reads = integrator.reads() if isinstance(integrator, Reading) else Reads()
    return Integration(answer_name(integrator), kind_of(integrator), named, reads)


def unique_answer_names(integrators: Sequence[Integrator]) -> None:
    """Refuse two integrators that would give answers of one name: the record keeps answers by
    name, so the later would replace the earlier, scored as if it were it."""
    seen: dict[str, int] = {}
    for i, integrator in enumerate(integrators):
        name = answer_name(integrator)
        if name in seen:
            raise ValueError(
                f"integrators[{i}] gives the answer {name!r}, as integrators[{seen[name]}] does: "
                "give each its own name (name: ...)"
            )
        seen[name] = i


@METHODS.register("chainrag")
@attrs.frozen
class ChainRAG:
    """ChainRAG (§3.2–3.4): decompose; for each sub-question rewrite if it points back
    (pronoun trigger), retrieve seeds and expand over the sentence graph, answer; summarise an
    unanswered step's sentences into the next step's context; integrate (AnsInt and/or CxtInt;
    the first integrator gives the primary answer). ``rewrite: false`` is the "w/o rewriting"
    ablation; ``summarizer: null`` drops the summary step (the authors' code has none). For the
    authors' code: ``multi_hop_judge`` keeps a question the judge calls single-hop whole, and
    ``confirm_rewrite`` asks ``confirmer`` (default ``llm_refers_back``: the LLM, rewriting
    only on an exact "yes") whether a triggered sub-question really refers back; its verdict
    is the step's ``rewrite_check`` in the trace. ``answer_from_judge`` (not the paper's)
    takes a step's sub-answer from its walk's last verdict when that said "yes" and no summary
    is carried: with a judge that answers (``llm_answerable``, whose request is the
    sub-answer's) the answerer would send the same request again; the recipe check refuses it
    with another judge.
    Recipe: ``{kind: chainrag, integrators: [{kind: ans_int}, {kind: cxt_int}]}``.
    """

    decomposer: Decomposer = attrs.field(factory=LLMDecomposer)
    multi_hop_judge: MultiHopJudge | None = None
    rewrite_trigger: RewriteTrigger = attrs.field(factory=PronounWords)
    rewriter: Rewriter = attrs.field(factory=LLMRewriter)
    summarizer: Summarizer | None = attrs.field(factory=LLMSummarizer)
    answerer: Answerer = attrs.field(factory=lambda: LLMShortAnswer(prompt_version=2))
    integrators: tuple[Integrator, ...] = attrs.field(factory=lambda: (AnsInt(), CxtInt()))
    rewrite: bool = True
    confirm_rewrite: bool = False
    answer_from_judge: bool = False
    confirmer: RewriteConfirmer | None = None
    """The stage ``confirm_rewrite`` asks; None: ``llm_refers_back``."""

    def __attrs_post_init__(self) -> None:
        if not self.integrators:
            raise ValueError("'integrators' needs at least one integrator")
        if self.confirmer is not None and not self.confirm_rewrite:
            raise ValueError("'confirmer' is asked only with 'confirm_rewrite: true'; set both")
        unique_answer_names(self.integrators)

    def check_recipe(self, recipe: Recipe) -> None:
        """``answer_from_judge`` needs a judge that answers."""
        judge = recipe.judge
        if self.answer_from_judge and not (isinstance(judge, AnsweringJudge) and judge.answers):
            raise ValueError(
                "answer_from_judge takes each sub-answer from the walk's sufficiency judge, "
                "which must be one that answers (retrieval.expander.judge: {kind: "
                f"llm_answerable}}); this recipe's is {type(judge).__name__}"
            )

    def notes(self) -> MethodNotes:
        """What the records say of this method's answers and rewriting
        (:class:`~chainrag.protocols.parts.Noted`)."""
        trigger = self.rewrite_trigger
        words = trigger.words if isinstance(trigger, Worded) else ()
        rewriting = Rewriting(self.rewrite, kind_of(trigger), words, self.confirm_rewrite)
        return MethodNotes(
            integrations=tuple(integration(i) for i in self.integrators),
            rewriting=rewriting,
            summarizes=self.summarizer is not None,
        )

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        decomposition = self.decompose(example.question, ctx)
        history: list[SubAnswer] = []
        steps: list[StepTrace] = []
        evidence: dict[int, str] = {}  # each unit, in retrieval order → its text
        carried: str | None = None  # summary of an unanswered previous step
        for sub_question in decomposition.sub_questions:
            before = ctx.usage()
            rewritten = None
            rewrites, check = self.rewrite_check(sub_question, history, ctx)
            if rewrites:
                rewritten = self.rewriter(sub_question, history, ctx)
            query = rewritten or sub_question
            expansion = ctx.retrieve(query)
            found = ctx.texts(expansion.units)
            # The summary goes after the sentences, so the request starts as the judge's did
            # and the server's prompt cache still holds the evidence (answer_sub@v2).
            context = found + ([carried] if carried else [])
            answer = self.judged_answer(query, expansion, carried)
            answer = answer or self.answerer(query, context, ctx)
            carried = None
            if not answer.answered and self.summarizer is not None:
                carried = self.summarizer(query, found, ctx)
            history.append(answer)
            for unit, text in zip(expansion.units, found, strict=True):
                evidence.setdefault(unit, text)
            steps.append(StepTrace(sub_question, rewritten, expansion.units, expansion, answer,
                                   ctx.usage() - before, summary=carried,
                                   rewrite_check=check))  # fmt: skip
        inputs = IntegrationInput(
            question=example.question,
            sub_answers=tuple(history),
            original_sub_questions=decomposition.sub_questions,
            evidence=tuple(evidence.values()),
            evidence_units=tuple(evidence),
        )
        answers = tuple(
            NamedAnswer(answer_name(i), inputs.integrated.answer(i, inputs, ctx))
            for i in self.integrators
        )
        return Prediction(answers, tuple(steps), decomposition)

    def decompose(self, question: str, ctx: Context) -> Decomposition:
        """Sub-questions; the question itself when the multi-hop judge says it is single-hop."""
        if self.multi_hop_judge is not None:
            verdict = self.multi_hop_judge(question, ctx)
            if not verdict.ok:
                return Decomposition((question,), raw=f"single-hop: {verdict.raw}")
        return self.decomposer(question, ctx)

    def judged_answer(
        self, query: str, expansion: Expansion, carried: str | None
    ) -> SubAnswer | None:
        """The sub-answer the walk's judge already gave (``answer_from_judge``): its last
        verdict's answer when it said "yes" over exactly what the answerer would read; else
        None."""
        if not (self.answer_from_judge and expansion.verdicts and carried is None):
            return None
        last = expansion.verdicts[-1]
        return SubAnswer(query, last.answer, True) if last.ok and last.answer is not None else None

    def rewrite_check(
        self, sub_question: str, history: Sequence[SubAnswer], ctx: Context
    ) -> tuple[bool, Verdict | None]:
        """Whether to rewrite, and the confirmer's verdict where it was asked: rewrite when
        enabled, the previous step was answered, and the trigger fires (and, with
        ``confirm_rewrite``, the confirmer says yes)."""
        if not (self.rewrite and history and history[-1].answered):
            return False, None
        if not self.rewrite_trigger(sub_question):
            return False, None
        if not self.confirm_rewrite:
            return True, None
        verdict = (self.confirmer or LLMRefersBack())(sub_question, history, ctx)
        return verdict.ok, verdict


@METHODS.register("naive")
@attrs.frozen
class NaiveRAG:
    """NaiveRAG: retrieve the top-k units for the question, answer from them.

    Recipe: ``{kind: naive}`` with a chunk index and ``retrieval.seed.k``.
    """

    answerer: Answerer = attrs.field(factory=lambda: LLMShortAnswer(prompt="cxtint"))

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        expansion = ctx.retrieve(example.question)
        answer = self.answerer(example.question, ctx.texts(expansion.units), ctx)
        step = StepTrace(example.question, None, expansion.units, expansion, answer, ctx.usage())
        return Prediction((NamedAnswer("naive", Answer(answer.answer)),), (step,))


@METHODS.register("naive_qd")
@attrs.frozen
class NaiveQD:
    """NaiveRAG with question decomposition: decompose, retrieve for every sub-question as it
    is (no rewriting), answer the question from everything retrieved. Recipe: ``{kind: naive_qd}``.
    """

    decomposer: Decomposer = attrs.field(factory=LLMDecomposer)
    answerer: Answerer = attrs.field(factory=lambda: LLMShortAnswer(prompt="cxtint"))

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        decomposition = self.decomposer(example.question, ctx)
        steps, evidence = [], []
        for sub_question in decomposition.sub_questions:
            expansion = ctx.retrieve(sub_question)
            evidence.extend(ctx.texts(expansion.units))
            steps.append(StepTrace(sub_question, None, expansion.units, expansion))
        answer = self.answerer(example.question, list(dict.fromkeys(evidence)), ctx)
        return Prediction(
            (NamedAnswer("naive_qd", Answer(answer.answer)),), tuple(steps), decomposition
        )


@METHODS.register("iter_retgen")
@attrs.frozen
class IterRetGen:
    """Iter-RetGen (Shao et al., 2023): ``iterations`` rounds of retrieving with the question
    plus the previous round's whole generation appended, then generating from what was
    retrieved; the answer is read from the last generation.

    ``chain_of_thought: true`` (default, as the paper) generates step-by-step reasoning ending
    in "So the answer is: ..." (prompt ``iter_retgen``); when the last generation has no such
    line (small models forget it), ``answerer`` reads the answer from the last round's
    context in one more call, unless ``short_answer_fallback: false``. ``chain_of_thought:
    false`` generates a short answer with ``answerer`` each round instead (our first version).
    Recipe: ``{kind: iter_retgen, iterations: 3}``.
    """

    iterations: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    answerer: Answerer = attrs.field(factory=lambda: LLMShortAnswer(prompt="cxtint"))
    chain_of_thought: bool = True
    short_answer_fallback: bool = True
    prompt_version: int = 1

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        generation, answer_text = "", ""
        steps: list[StepTrace] = []
        for _ in range(self.iterations):
            before = ctx.usage()
            query = f"{example.question} {generation}".strip()
            expansion = ctx.retrieve(query)
            evidence = ctx.texts(expansion.units)
            if self.chain_of_thought:
                llm = ctx.require_llm("iter_retgen generation")
                prompt = load_prompt("iter_retgen", self.prompt_version)
                reply = llm.complete(prompt.request(question=example.question,
                                                    evidence=numbered(evidence)))  # fmt: skip
                generation, stated = reply.text.strip(), stated_answer(reply.text)
                answer_text = final_answer(reply.text) if stated is None else stated
                last = len(steps) == self.iterations - 1
                if last and self.short_answer_fallback and stated is None:
                    answer_text = self.answerer(example.question, evidence, ctx).answer
            else:
                generation = answer_text = self.answerer(example.question, evidence, ctx).answer
            answer = SubAnswer(example.question, answer_text, not is_unanswerable(answer_text))
            steps.append(StepTrace(query, None, expansion.units, expansion, answer,
                                   ctx.usage() - before))  # fmt: skip
        return Prediction((NamedAnswer("iter_retgen", Answer(answer_text, generation)),),
                          tuple(steps))  # fmt: skip
