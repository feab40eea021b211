"""Integration (ChainRAG §3.4): AnsInt (the sub-questions and their answers) and CxtInt (the
retrieved sentences) give the final answer; an integrator's answer name (:func:`answer_name_ok`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from chainrag.components.reasoning.answer_form import clean_answer, final_answer
from chainrag.components.reasoning.sub_questions import history_text
from chainrag.components.retrieval.judges import numbered
from chainrag.components.retrieval.rerankers import NoRerank
from chainrag.core.budget import fit, words
from chainrag.core.context import Context, MissingResourceError
from chainrag.core.notes import Reads
from chainrag.core.types import (
    Answer,
    Hit,
    IntegrationInput,
    Sentence,
)
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.retrieval import Reranker, Sentenced
from chainrag.recipes.registry import INTEGRATORS, kind_of

if TYPE_CHECKING:
    from chainrag.recipes.recipe import Recipe


ANSWER_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def answer_name_ok(
    instance: object, attribute: attrs.Attribute[str | None], value: str | None
) -> None:
    """An integrator's ``name``: lower-case letters, digits and ``_``, a letter first (it keys
    the run's records and shows in the report)."""
    if value is not None and not ANSWER_NAME.match(value):
        raise ValueError(
            f"name {value!r}: an answer's name is lower-case letters, digits and _, a letter first"
        )


@INTEGRATORS.register("ans_int")
@attrs.frozen
class AnsInt:
    """AnsInt (§3.4): the original question and the sub-question/answer pairs → the answer.

    ``use_original_sub_questions`` feeds the sub-questions before rewriting (the authors' code).
    Recipe: ``{kind: ans_int}``.
    """

    use_original_sub_questions: bool = False
    prompt_version: int = 1
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    def reads(self) -> Reads:
        """The sub-questions, as decomposed or as rewritten, with their sub-answers."""
        return Reads(sub_questions="decomposed" if self.use_original_sub_questions else "rewritten")

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        llm = ctx.require_llm("ans_int integrator")
        pairs = list(inputs.sub_answers)
        if self.use_original_sub_questions and len(inputs.original_sub_questions) == len(pairs):
            originals = inputs.original_sub_questions
            pairs = [attrs.evolve(p, question=q) for p, q in zip(pairs, originals, strict=True)]
        prompt = load_prompt("ansint", self.prompt_version)
        reply = llm.complete(prompt.request(question=inputs.question, pairs=history_text(pairs)))
        return Answer(clean_answer(reply.text), reply.text)


@INTEGRATORS.register("cxt_int")
@attrs.frozen
class CxtInt:
    """CxtInt (§3.4): all retrieved sentences, de-duplicated, reranked against the original
    question, kept within the word budget → the answer. Recipe: ``{kind: cxt_int}``.

    ``layout: passages`` (not the paper's) shows the same kept sentences as passages: those of
    one passage together, in the passage's own order, after its title, the passages in the
    order of their best-ranked sentence — so a sentence reads with what names its subject. The
    budget counts the sentences' words, as before; it needs an index of sentences.
    ``notes: true`` (not the paper's) adds the answered sub-questions and their answers after
    the context, as notes that may be wrong (prompt ``cxtint_notes``): what AnsInt reads and
    what CxtInt reads in one request.
    ``order: best_last`` (not the paper's) shows the same items in reverse, the best-ranked
    sentence or passage last, next to the question that follows the context — for readers
    that weigh what they read last (the paper shows the best first).
    ``reason: true`` (not the paper's) lets the reader name the facts that answer the question
    in at most three short sentences before its answer (prompt ``cxtint_reason``, the answer
    read after its last "So the answer is"): one call, as before, with more completion tokens.
    """

    reranker: Reranker = attrs.field(factory=NoRerank)
    word_budget: int = attrs.field(default=3000, validator=attrs.validators.ge(1))
    layout: Literal["ranked", "passages"] = "ranked"
    order: Literal["best_first", "best_last"] = "best_first"
    notes: bool = False
    reason: bool = attrs.field(default=False)
    prompt_version: int = 1
    name: str | None = attrs.field(default=None, validator=answer_name_ok)
    """The answer's name in the run's records (default: the kind without ``_``, ``ansint``)."""

    @reason.validator
    def _one_prompt(self, _: attrs.Attribute[bool], reason: bool) -> None:
        if reason and self.notes:
            raise ValueError(
                "cxt_int: notes: true and reason: true are two different prompts "
                "(cxtint_notes, cxtint_reason); choose one"
            )

    def reads(self) -> Reads:
        """The evidence, reranked and cut at the word budget (with ``notes``, the answered
        sub-questions too)."""
        rewritten: Literal["rewritten"] | None = "rewritten" if self.notes else None
        return Reads(rewritten, self.word_budget, kind_of(self.reranker))

    def check_recipe(self, recipe: Recipe) -> None:
        """``layout: passages`` needs an index of sentences."""
        if self.layout == "passages" and recipe.index is not None and recipe.index.chunker:
            raise ValueError(
                "cxt_int's layout: passages shows each sentence with its passage's other kept "
                "sentences and title; this recipe's index is chunks (index.chunker): use "
                "layout: ranked"
            )

    def __call__(self, inputs: IntegrationInput, ctx: Context) -> Answer:
        llm = ctx.require_llm("cxt_int integrator")
        readable = inputs.readable()
        texts = [text for text, _ in readable]
        hits = [Hit(i, 0.0) for i in range(len(texts))]  # the candidates, by position
        ranked = self.reranker(inputs.question, hits, texts, ctx)
        kept, _, _ = fit(ranked, lambda hit: words(texts[hit.index]), self.word_budget)
        shown = [texts[hit.index] for hit in kept]
        if self.layout == "passages":
            shown = as_passages([readable[hit.index][1] for hit in kept], ctx)
        if self.order == "best_last":
            shown.reverse()
        values = {"question": inputs.question, "evidence": numbered(shown)}
        if self.notes:
            values["pairs"] = history_text([a for a in inputs.sub_answers if a.answered])
        name = "cxtint_notes" if self.notes else "cxtint_reason" if self.reason else "cxtint"
        reply = llm.complete(load_prompt(name, self.prompt_version).request(**values))
        read = final_answer if self.reason else clean_answer
        return Answer(read(reply.text), reply.text)


def as_passages(kept: Sequence[int | None], ctx: Context) -> list[str]:
    """The sentence units ``kept`` (best first) as one ``title: sentence sentence …`` text per
    passage, sentences in passage order, passages in the order of their best sentence."""
    index = ctx.require_index()
    if not isinstance(index, Sentenced) or None in kept:
        raise MissingResourceError(
            "cxt_int with layout: passages needs an index of sentences and the units its "
            "evidence came from (ChainRAG over a sentence graph or a corpus index)"
        )
    sentences = [index.sentences[unit] for unit in kept if unit is not None]
    groups: dict[int, list[Sentence]] = {}
    for sentence in sentences:
        groups.setdefault(sentence.passage, []).append(sentence)
    return [
        f"{group[0].title}: " + " ".join(s.text for s in sorted(group, key=lambda s: s.position))
        for group in groups.values()
    ]
