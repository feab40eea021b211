"""LongBench-length contexts from the dev sets: ``--dataset long:musique`` (and ``long:hotpotqa``,
``long:2wiki``), and from any question file: ``long:NAME:PATH`` pads the file at PATH as
``long:NAME`` pads NAME's dev file (to NAME's LongBench length, from the file's own other
questions); ``long:PATH`` does so for a MuSiQue-format file, whose format says its length.

The ChainRAG paper evaluates on LongBench, whose MuSiQue / HotpotQA / 2Wiki contexts average
11,214 / 9,151 / 4,887 words; the dev files here give each question 10-20 paragraphs (about
1,700 / 900 / 650 words), short enough that one hop of the walk reaches almost all the gold
evidence. ``long:NAME`` pads each question's own paragraphs with other questions' paragraphs of
the same dev file up to LongBench's mean for that dataset:

* a paragraph is never added to a question that already has its title or its text (so a gold
  sentence, named by title, stays unambiguous), nor twice;
* candidates are taken in an order shuffled per question (seed :data:`SEED` and the question
  id, so a question's context does not depend on ``--limit`` or on the other questions asked),
  until the context holds at least the target number of words;
* the question's own paragraphs and the added ones are then shuffled together (same seed), and
  the gold paragraph indexes (MuSiQue's supporting paragraphs and decomposition steps) follow
  their paragraphs.

How this differs from LongBench's own files (which load unchanged with ``longbench:PATH``):
ours are other dev questions' paragraphs (topically unrelated as a rule, so they add length
more than difficulty: docs/results.md's lost-in-retrieval probe ranks step 1's gold paragraph in
the top 2 as often among 135 paragraphs as among the own 20; whether LongBench's added passages
are harder could not be checked offline); LongBench gives a context as one text, ours keeps
paragraphs with titles and the dev files' gold annotations, so Recall@k can still be scored.
:func:`setting` is what a run records of it (``run.json``'s ``dataset_setting``).

Layer: data; imports :mod:`chainrag.core` only.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import attrs

from chainrag.core.types import GoldStep, Passage, QAExample

PREFIX = "long:"
"""Prefix of a dev set padded to LongBench's context length."""

VERSION = 1
"""Bumped whenever the padding would give other contexts for the same file."""

SEED = 0

LONGBENCH_WORDS = {"musique": 11_214, "hotpotqa": 9_151, "2wiki": 4_887}
"""LongBench's mean context length in words per dataset (the ChainRAG paper's Table 6)."""


def words(passage: Passage) -> int:
    """The words of a paragraph as LongBench counts them (whitespace-separated, title too)."""
    return len(passage.title.split()) + len(passage.text.split())


FORMAT_LENGTHS = {"MuSiQue": "musique"}
"""The LongBench length a question file given as ``long:PATH`` is padded to, by the format its
records are in, where the format says which dataset it is. HotpotQA and 2Wiki share one format
(and HippoRAG's files may be any of the three), so those are named: ``long:2wiki:PATH``."""


def setting(length: str, source: str | None = None) -> str:
    """What ``long:NAME`` does (``source`` None or NAME), or ``long:NAME:PATH`` to the
    question file at PATH (``source``), as a run records it."""
    if source is None or source == length:
        return (
            f"long v{VERSION}: each question's paragraphs padded with other {length} dev "
            f"questions' paragraphs to >= {LONGBENCH_WORDS[length]:,} words (LongBench's mean), "
            f"shuffled with seed {SEED}"
        )
    return (
        f"long v{VERSION}: each question's paragraphs padded with the same file's other "
        f"questions' paragraphs to >= {LONGBENCH_WORDS[length]:,} words (LongBench's {length} "
        f"mean), shuffled with seed {SEED}"
    )


def _rng(qid: str) -> random.Random:
    digest = hashlib.sha256(f"{SEED}:{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # noqa: S311 - a shuffle, not a secret


def pad(examples: Sequence[QAExample], target: int, pool: Sequence[QAExample]) -> list[QAExample]:
    """Each example with its context padded from ``pool``'s paragraphs to ``target`` words.

    ``pool`` is every question of the dev file (an example's own paragraphs in it are never
    added to it). A context already at ``target`` words is only shuffled.
    """
    candidates: list[Passage] = []
    seen: set[tuple[str, str]] = set()
    for other in pool:
        for passage in other.passages:
            if (passage.title, passage.text) not in seen:
                seen.add((passage.title, passage.text))
                candidates.append(passage)
    return [_padded(example, target, candidates) for example in examples]


def _moved(step: GoldStep, new_index: dict[int, int]) -> GoldStep:
    if step.paragraph is None:
        return step
    return attrs.evolve(step, paragraph=new_index[step.paragraph])


def _padded(example: QAExample, target: int, candidates: Sequence[Passage]) -> QAExample:
    rng = _rng(example.qid)
    titles = {p.title for p in example.passages}
    texts = {p.text for p in example.passages}
    total = sum(words(p) for p in example.passages)
    added: list[Passage] = []
    order = list(range(len(candidates)))
    rng.shuffle(order)
    for i in order:
        if total >= target:
            break
        passage = candidates[i]
        if passage.title in titles or passage.text in texts:
            continue
        titles.add(passage.title)
        texts.add(passage.text)
        added.append(passage)
        total += words(passage)
    context = [*example.passages, *added]
    positions = list(range(len(context)))
    rng.shuffle(positions)  # positions[j]: the paragraph placed j-th
    new_index = {old: new for new, old in enumerate(positions)}
    return attrs.evolve(
        example,
        passages=tuple(
            attrs.evolve(context[old], pid=str(new)) for new, old in enumerate(positions)
        ),
        supporting_passages=tuple(new_index[i] for i in example.supporting_passages),
        decomposition=tuple(_moved(step, new_index) for step in example.decomposition),
    )
