"""Does a sufficiency judge tell a sub-question's evidence that holds its gold paragraph from
evidence that does not? (issue 49; ``chainrag experiment judge-steps``.)

ChainRAG's walk asks its judge, after each hop, whether the evidence gathered for one
sub-question suffices. MuSiQue gives every step of a question's gold decomposition its
supporting paragraph, so the judge can be probed where the walk uses it. For each step:

- the **sub-question** is the step's question with ``#k`` replaced by step k's gold answer
  (what the rewriting stage aims at), a Wikidata-form step (``Columbia >> shares border
  with``) read as ``What is the shares border with of Columbia?``;
- the question's own paragraphs are ranked against it by the recipe's embedder, and two
  probes of two paragraphs each are made: **sufficient**, the step's gold paragraph and the
  best-ranked other paragraph, and **insufficient**, the two best-ranked other paragraphs.
  Both hold as many paragraphs, and the insufficient one holds what a retriever finds next
  (hard negatives), so length tells nothing.

Every probe gets five scores from one LLM call (prompt ``sufficiency@v2``, the walk's):

- ``llm_yes_no``: today's judge, 1 where its reply says yes;
- ``P(yes)``: the same reply's first-token yes share (``llm_yes_probability``);
- ``similarity``: the best cosine between the sub-question and an evidence paragraph;
- ``overlap``: the best paragraph's share of the sub-question's content words;
- ``combined``: a logistic regression over the three before, fit on the training probes.

The table gives each judge's ROC AUC on the measured questions (a 95% interval from 2,000
bootstrap resamples of questions, since a question's probes are not independent) and on the
training questions; for each scoring judge, the threshold that maximises balanced accuracy on
the training probes — never on the measured ones — and what that threshold says on the
measured probes: its yes-rate on insufficient and on sufficient evidence. This module makes
the probes; :mod:`~chainrag.experiments.roc` (the ROC statistics),
:mod:`~chainrag.experiments.judge_combination` (the logistic fit) and
:mod:`~chainrag.experiments.judge_steps_table` (the table) measure them, and their names are
importable from here too; a probe is a :class:`~chainrag.experiments.step_probe.StepProbe`,
which those modules read without importing this one.

Layer: experiments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from chainrag.components.retrieval.judges import numbered, parse_yes_no, yes_share
from chainrag.context import StageContext
from chainrag.core.types import GoldStep, QAExample
from chainrag.experiments.judge import JudgeProbeError, paragraph_texts
from chainrag.experiments.judge_combination import FEATURES, combination, features
from chainrag.experiments.judge_steps_table import JUDGES, JudgeRow, rows, table
from chainrag.experiments.probes import Progress, SavedProbes, counted, save_probes
from chainrag.experiments.roc import auc_interval, best_threshold, roc_auc
from chainrag.experiments.step_probe import StepProbe
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder, SentenceSplitter
from chainrag.recipes.recipe import Recipe, load_recipe

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from chainrag.llm.cache import CacheMode

TOP_LOGPROBS = 10
"""The first token's likeliest tokens asked for (the ``llm_yes_probability`` default)."""


_REFERENCE = re.compile(r"#(\d+)")
_WORD = re.compile(r"[a-z0-9]+")


@attrs.frozen
class Draft:
    """A probe before the judges: the sub-question and its evidence."""

    qid: str
    step: int
    sub_question: str
    sufficient: bool
    paragraphs: tuple[int, ...]
    texts: tuple[str, ...]
    similarity: float


def sub_question(steps: Sequence[GoldStep], i: int) -> str:
    """Step ``i``'s question with ``#k`` as step k's gold answer, a Wikidata-form step
    (``SUBJECT >> relation``) read as ``What is the relation of SUBJECT?``."""

    def answer(match: re.Match[str]) -> str:
        k = int(match.group(1))
        return steps[k - 1].answer if 1 <= k <= len(steps) else match.group(0)

    text = _REFERENCE.sub(answer, steps[i].question).strip()
    if ">>" in text:
        subject, relation = (part.strip() for part in text.split(">>", 1))
        text = f"What is the {relation} of {subject}?"
    return text


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that are not English stop words (spaCy's list)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def overlap(question: str, paragraphs: Sequence[str]) -> float:
    """The best paragraph's share of the question's content words (0 when it has none)."""
    wanted = content_words(question)
    if not wanted:
        return 0.0
    return max(len(wanted & set(_WORD.findall(p.lower()))) / len(wanted) for p in paragraphs)


def drafts(
    example: QAExample,
    embedder: Embedder,
    ctx: Context,
    paragraphs: int = 2,
    splitter: SentenceSplitter | None = None,
) -> list[Draft]:
    """The two probes of each step of ``example`` with a gold paragraph, ``paragraphs``
    paragraphs each (none where the question has no more paragraphs than that). With a
    ``splitter``, a probe's similarity is its best sentence's cosine (the walk's units are
    sentences), else its best paragraph's; the paragraphs are ranked by theirs either way."""
    texts = paragraph_texts(example)
    if len(texts) <= paragraphs:
        return []
    steps = example.decomposition
    questions = [sub_question(steps, i) for i in range(len(steps))]
    vectors = embedder(texts, ctx, "passage")
    queries = embedder(questions, ctx, "query")
    best_sentence = None
    if splitter is not None:
        best_sentence = sentence_cosines(example, splitter, embedder, queries, ctx)
    out = []
    for i, step in enumerate(steps):
        gold = step.paragraph
        if gold is None or not 0 <= gold < len(texts):
            continue
        cosine = vectors @ queries[i]
        ranked = [int(j) for j in np.argsort(-cosine, kind="stable")]
        others = [j for j in ranked if j != gold]
        enough, short = {gold, *others[: paragraphs - 1]}, set(others[:paragraphs])
        for sufficient, chosen in ((True, enough), (False, short)):
            order = tuple(j for j in ranked if j in chosen)
            out.append(
                Draft(
                    example.qid,
                    i + 1,
                    questions[i],
                    sufficient,
                    order,
                    tuple(texts[j] for j in order),
                    float(
                        cosine[list(order)].max()
                        if best_sentence is None
                        else best_sentence[list(order), i].max()
                    ),
                )
            )
    return out


def sentence_cosines(
    example: QAExample,
    splitter: SentenceSplitter,
    embedder: Embedder,
    queries: NDArray[np.float32],
    ctx: Context,
) -> NDArray[np.float64]:
    """For each of ``example``'s paragraphs (rows) and each query (columns), the best cosine of
    one of its sentences to the query (-1 for a paragraph without a sentence)."""
    sentences = splitter(example.passages, ctx)
    of_paragraph = np.array([s.passage for s in sentences])
    by_sentence = embedder([s.text for s in sentences], ctx, "passage") @ queries.T
    best = np.full((len(example.passages), len(queries)), -1.0)
    for j in range(len(example.passages)):
        if (mine := of_paragraph == j).any():
            best[j] = by_sentence[mine].max(axis=0)
    return best


def ask(split: str, draft: Draft, ctx: Context) -> StepProbe:
    """The judges' scores for one draft: one LLM call (the walk's judge prompt with the first
    token's log-probabilities) and the overlap."""
    llm = ctx.require_llm("judge-steps probe")
    request = load_prompt("sufficiency", 2).request(
        question=draft.sub_question, evidence=numbered(draft.texts)
    )
    reply = llm.complete(attrs.evolve(request, top_logprobs=TOP_LOGPROBS))
    return StepProbe(
        split, draft.qid, draft.step, draft.sub_question, draft.sufficient, draft.paragraphs,
        sum(len(t.split()) for t in draft.texts), parse_yes_no(reply.text) is True,
        yes_share(reply), draft.similarity, overlap(draft.sub_question, draft.texts), reply.text,
    )  # fmt: skip


def probe(
    split: str,
    examples: Iterable[QAExample],
    embedder: Embedder,
    ctx: Context,
    paragraphs: int = 2,
    splitter: SentenceSplitter | None = None,
) -> list[StepProbe]:
    """Every probe of ``examples`` (``paragraphs`` paragraphs each; similarity per sentence
    with a ``splitter``), asked through ``ctx.llm``."""
    return [
        ask(split, d, ctx)
        for example in examples
        for d in drafts(example, embedder, ctx, paragraphs, splitter)
    ]


def embedder_of(recipe: Recipe) -> Embedder:
    """The recipe's index embedder, or a clear error."""
    if recipe.index is None or recipe.index.embedder is None:
        raise JudgeProbeError(
            f"recipe {recipe.name!r} has no index embedder (index.embedder), which ranks the "
            "paragraphs; use a ChainRAG recipe such as recipes/chainrag/ansint.yaml"
        )
    return recipe.index.embedder


SIMILARITY_UNITS = ("paragraphs", "sentences")


def units_given(units: str) -> str:
    """``units`` if it is one of :data:`SIMILARITY_UNITS`, else a clear error."""
    if units not in SIMILARITY_UNITS:
        raise JudgeProbeError(
            f"similarity units {units!r}: give one of {', '.join(SIMILARITY_UNITS)}"
        )
    return units


def splitter_of(recipe: Recipe) -> SentenceSplitter:
    """The recipe's sentence splitter (``index.splitter``), or a clear error."""
    if recipe.index is None or recipe.index.splitter is None:
        raise JudgeProbeError(
            f"recipe {recipe.name!r} has no sentence splitter (index.splitter), which the "
            "similarity per sentence needs; use a ChainRAG recipe such as "
            "recipes/chainrag/ansint.yaml"
        )
    return recipe.index.splitter


def with_decompositions(examples: Sequence[QAExample], dataset: str) -> Sequence[QAExample]:
    """``examples``, or a clear error where none has a gold decomposition with paragraphs."""
    if not any(s.paragraph is not None for e in examples for s in e.decomposition):
        raise JudgeProbeError(
            f"dataset {dataset!r} has no gold decomposition with supporting paragraphs "
            "(MuSiQue's question_decomposition); this probe needs one"
        )
    return examples


def experiment(
    recipe: Path,
    dataset: str,
    train: str | None,
    limit: int,
    out: Path,
    cache_mode: CacheMode = "use",
    progress: Progress | None = None,
    paragraphs: int = 2,
    similarity_units: str = "paragraphs",
) -> SavedProbes:
    """Probe ``dataset``'s first ``limit`` questions (and ``train``'s, where thresholds and
    the combination are chosen), ``paragraphs`` paragraphs a probe (more: nearer the length of
    the evidence a walk has after one hop), through the recipe's LLM and the response cache,
    and save the table and the probes in ``out`` (``judge-steps-DATASET[-pN][-s]-<time>``).
    ``similarity_units``: ``paragraphs`` (a probe's similarity is its best paragraph's cosine)
    or ``sentences`` (its best sentence's, split by the recipe's ``index.splitter``: what the
    ``similarity`` judge sees in a walk over a sentence graph).

    The recipe and both datasets are checked before the LLM is opened; a run stopped part way
    asks again only what the response cache does not hold.
    """
    from chainrag.core.paths import llm_cache_path
    from chainrag.data.datasets import load_dataset
    from chainrag.llm import open_llm

    resolved = load_recipe(recipe)
    embedder = embedder_of(resolved)
    splitter = splitter_of(resolved) if units_given(similarity_units) == "sentences" else None
    measured = with_decompositions(load_dataset(dataset, limit), dataset)
    training = with_decompositions(load_dataset(train, limit), train) if train else []
    found: dict[str, list[StepProbe]] = {}
    with open_llm(resolved.llm, cache_path=llm_cache_path(), cache_mode=cache_mode) as llm:
        ctx = StageContext(llm=llm)
        for split, examples in ((train, training), (dataset, measured)):
            if split:
                label = f"probing {split}"
                found[split] = probe(
                    split, counted(examples, progress, label), embedder, ctx, paragraphs,
                    splitter,
                )  # fmt: skip
    probes: list[Any] = [*found.get(train or "", []), *found[dataset]]
    text = table(found[dataset], found.get(train or "", []), str(recipe))
    if splitter is not None:
        text += "\n\nsimilarity: a probe's best sentence's cosine to the sub-question."
    stem = f"judge-steps-{dataset}" + (f"-p{paragraphs}" if paragraphs != 2 else "")
    stem += "-s" if splitter is not None else ""
    return save_probes(out / stem, text, resolved, probes)


__all__ = [
    "FEATURES",
    "JUDGES",
    "TOP_LOGPROBS",
    "Draft",
    "JudgeProbeError",
    "JudgeRow",
    "StepProbe",
    "ask",
    "auc_interval",
    "best_threshold",
    "combination",
    "drafts",
    "experiment",
    "features",
    "probe",
    "roc_auc",
    "rows",
    "sub_question",
    "table",
    "units_given",
    "with_decompositions",
]
