"""IRCoT (Trivedi et al. 2023) as HippoRAG's code runs it (``src/ircot_hipporag.py``, then
``src/qa/qa_reader.py``), over any seed retriever: dense, hybrid, HippoRAG's.

Retrieve ``read`` passages for the question; then, until a thought says "So the answer is:"
or ``max_steps`` retrievals were made, the LLM writes one thought over the passages so far
(the best ``read`` of them) and the thoughts before it, and that thought alone is the next
query. Passages are merged as the reference loop merges them: each keeps its best score, and
the pool is read best first (``pool: by_score``); IRCoT's own code instead keeps the passages
in the order they came, at most ``max_paragraphs`` (``pool: cumulative``). The answer is
HippoRAG's QA reader's: chain-of-thought over the best ``answer_with`` passages, the text after
"Answer:". With ``max_steps: 1`` this is one-step retrieval, then the reader (HippoRAG's
single-step rows).

The demonstrations (IRCoT's first of ``gold_with_3_distractors_context_cot_qa_codex.txt``, as
the code's ``--num_demo 1``) and the step limit follow the question's dataset as the authors'
scripts choose them (``demos: auto``: HotpotQA's for a dataset whose name holds "hotpotqa",
2Wiki's for "2wiki", MuSiQue's otherwise; ``max_steps`` unset: 4 for MuSiQue, 2 otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from chainrag.core.types import (
    Answer,
    Hit,
    NamedAnswer,
    PhraseGraphStats,
    Prediction,
    QAExample,
    StepTrace,
    Usage,
)
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.phrases import BuildsPhraseGraph
from chainrag.recipes.registry import METHODS

if TYPE_CHECKING:
    from chainrag.recipes.recipe import Recipe

Demos = Literal["auto", "musique", "hotpotqa", "2wiki"]
ANSWER_MARK = "So the answer is:"
"""What ends the loop, wherever it stands in a thought (the code's ``in`` test)."""
STEPS = {"musique": 4, "hotpotqa": 2, "2wiki": 2}
"""The authors' ``--max_steps`` for each dataset (their run scripts, and the IRCoT baseline's
defaults)."""


def dataset_demos(dataset: str) -> Literal["musique", "hotpotqa", "2wiki"]:
    """Whose demonstrations a dataset's questions get, as the authors' scripts pick a prompt
    file by name: HotpotQA's, MuSiQue's, 2Wiki's, else MuSiQue's."""
    name = dataset.lower()
    if "hotpotqa" in name:
        return "hotpotqa"
    if "musique" in name:
        return "musique"
    return "2wiki" if "2wiki" in name else "musique"


def merge_best(pool: dict[int, float], hits: Sequence[Hit]) -> dict[int, float]:
    """The reference loop's merge: a new unit joins at the end with its score, a unit found
    again keeps its better score and its place (the pool stays in the order units came)."""
    merged = dict(pool)
    for hit in hits:
        merged[hit.index] = max(merged[hit.index], hit.score) if hit.index in merged else hit.score
    return merged


def by_score(pool: dict[int, float]) -> list[int]:
    """The pool best first, equal scores in the order the units came (a stable sort)."""
    return [u for u, _ in sorted(pool.items(), key=lambda kv: kv[1], reverse=True)]


def merge_same_title(passages: Sequence[str], prefix: str = "Wikipedia Title: ") -> list[str]:
    """The code's ``merge_elements_with_same_first_line`` (HotpotQA only): passages sharing a
    first line become one, each led by ``prefix``."""
    merged: dict[str, str] = {}
    for passage in passages:
        first = passage.split("\n")[0]
        if first in merged:
            merged[first] += "\n" + passage.split(first, 1)[1].strip("\n")
        else:
            merged[first] = prefix + passage
    return list(merged.values())


def first_sentence(text: str) -> str:
    """The first sentence of a generation (IRCoT's code keeps spaCy's first sentence; this
    splits after ``.``, ``!`` or ``?`` followed by white space)."""
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


def reader_answer(reply: str) -> str:
    """The code's ``response.split('Answer:')[1].strip()``, the whole reply where it has no
    "Answer:"."""
    parts = reply.split("Answer:")
    return parts[1].strip() if len(parts) > 1 else reply


@METHODS.register("ircot")
@attrs.frozen
class IRCoT:
    """IRCoT (Trivedi et al. 2023) as HippoRAG's code runs it, over any seed retriever.

    One thought a step, retrieval with it, until "So the answer is:" or ``max_steps``
    retrievals; passages merged by their best score; HippoRAG's QA reader answers.
    Recipe: ``{kind: ircot, read: 10, answer_with: 5}``.
    """

    max_steps: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    """Retrievals at most, the question's included (1: one-step retrieval); unset: the
    authors' scripts' limit for the question's dataset (4 for MuSiQue, 2 otherwise)."""
    read: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    """Passages a thought is written over, the best so far (the code's ``--top_k``)."""
    answer_with: int = attrs.field(default=5, validator=attrs.validators.ge(1))
    """Passages the QA reader reads, the best (the reader's ``--num_doc``)."""
    demos: Demos = "auto"
    """Whose IRCoT demonstration the prompts show; auto: by the question's dataset's name."""
    thought: Literal["whole", "first_sentence"] = "whole"
    """Keep a reasoning reply whole (HippoRAG's code) or its first sentence (IRCoT's)."""
    pool: Literal["by_score", "cumulative"] = "by_score"
    """Read the passages best score first (HippoRAG's loop) or in arrival order (IRCoT's)."""
    max_paragraphs: int = attrs.field(default=15, validator=attrs.validators.ge(1))
    """With ``pool: cumulative``, the passages kept at most (IRCoT's 15)."""
    prompt_version: int = 1
    """The version of the reasoning and reader prompts (``ircot_*@v1``, ``hipporag_reader_*``)."""

    def check_recipe(self, recipe: Recipe) -> None:
        """Passages are merged by their seed scores: a retrieval without an expander."""
        if recipe.retrieval is not None and recipe.retrieval.expander is not None:
            raise ValueError(
                "ircot merges its retrievals' seed scores, so its retrieval has no expander "
                "(set retrieval.expander: null)"
            )

    def __call__(self, example: QAExample, ctx: Context) -> Prediction:
        question = example.question
        demos = self.demos if self.demos != "auto" else dataset_demos(example.dataset)
        step, pool = self.retrieval_step(question, {}, ctx, ctx.usage())
        steps, thoughts = [step], list[str]()
        while len(thoughts) < (self.max_steps or STEPS[demos]) - 1:
            before = ctx.usage()
            thought = self.reason(question, self.ranked(pool)[: self.read], thoughts, demos, ctx)
            thoughts.append(thought)
            if ANSWER_MARK in thought:  # the last thought: nothing more is retrieved
                steps.append(StepTrace(thought, usage=ctx.usage() - before))
                break
            step, pool = self.retrieval_step(thought, pool, ctx, before)
            steps.append(step)
        answer = self.answer(question, self.ranked(pool)[: self.answer_with], demos, ctx)
        stats = self.graph_stats(ctx)
        return Prediction((NamedAnswer("ircot", answer),), tuple(steps), phrase_graph=stats)

    def retrieval_step(
        self, query: str, pool: dict[int, float], ctx: Context, before: Usage
    ) -> tuple[StepTrace, dict[int, float]]:
        """The recipe's seeds for ``query`` (with the scores the merge compares) merged into
        ``pool``: the step's trace, with the usage since ``before``, and the new pool."""
        hits = ctx.retriever().seeds(query, ctx)
        step = StepTrace(query, None, tuple(h.index for h in hits), usage=ctx.usage() - before)
        return step, self.merged(pool, hits)

    def merged(self, pool: dict[int, float], hits: Sequence[Hit]) -> dict[int, float]:
        """``pool`` with ``hits`` merged in (by best score, or appended up to the cap)."""
        if self.pool == "by_score":
            return merge_best(pool, hits)
        fresh = [h for h in hits if h.index not in pool]
        room = max(self.max_paragraphs - len(pool), 0)
        return {**pool, **{h.index: h.score for h in fresh[:room]}}

    def ranked(self, pool: dict[int, float]) -> list[int]:
        """The pool in the order the reasoner and the reader read it."""
        return by_score(pool) if self.pool == "by_score" else list(pool)

    def reason(
        self,
        question: str,
        units: Sequence[int],
        thoughts: Sequence[str],
        demos: str,
        ctx: Context,
    ) -> str:
        """The next thought over ``units``' passages (HippoRAG's ``reason_step``)."""
        passages = ctx.texts(units)
        if demos == "hotpotqa":
            passages = merge_same_title(passages)
        prompt = load_prompt(f"ircot_{demos}", self.prompt_version)
        request = prompt.request(
            passages="".join(f"{p}\n\n" for p in passages),
            question=question,
            thoughts=" ".join(thoughts),
        )
        reply = ctx.require_llm("ircot reasoning").complete(request).text
        return first_sentence(reply) if self.thought == "first_sentence" else reply

    def answer(self, question: str, units: Sequence[int], demos: str, ctx: Context) -> Answer:
        """HippoRAG's QA reader over ``units``' passages (``qa_read``)."""
        passages = "".join(f"Wikipedia Title: {p}\n\n" for p in ctx.texts(units))
        prompt = load_prompt(f"hipporag_reader_{demos}", self.prompt_version)
        request = prompt.request(passages=passages, question=question)
        reply = ctx.require_llm("ircot reader").complete(request).text
        return Answer(reader_answer(reply), reply)

    def graph_stats(self, ctx: Context) -> PhraseGraphStats | None:
        """What the retriever's phrase graph was built from, where it builds one."""
        retriever = ctx.retriever()
        builds = retriever.seed_part(BuildsPhraseGraph)  # type: ignore[type-abstract]
        return builds.graph_stats(retriever.index, ctx) if builds is not None else None
