"""Metrics: retrieval against gold evidence, and EM/F1 of answers.

Retrieval metrics follow HippoRAG's definition, not "the answer appears in the text".

Gold evidence is sentence-level where the dataset gives supporting sentences (HotpotQA,
2Wiki ``supporting_facts``) and paragraph-level otherwise (MuSiQue ``is_supporting``).
A retrieved unit (sentence or chunk) *covers* a gold paragraph if it comes from it, and a gold
sentence if their character spans in the same passage overlap — so spaCy's sentences and
chunks are scored against the dataset's own sentences.

For the first k retrieved units, in retrieval order:

* ``recall@k`` — covered gold items / gold items;
* ``hit@k`` — strict: 1 if every gold item is covered, else 0;
* ``mrr`` — 1 / rank of the first unit covering any gold item (0 if none);
* ``recall@all`` — over everything retrieved; ``words`` — words retrieved.

Supporting facts whose sentence index is past the end of their passage (a known wart of
HotpotQA) are dropped; facts whose title matches no passage count as never covered.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from chainrag.core.types import Chunk, Passage, QAExample, Sentence

Level = Literal["sentence", "paragraph"]
Unit = Sentence | Chunk
GoldKey = tuple[int, int]  # (passage, dataset sentence); paragraphs use sentence -1


@attrs.frozen
class RetrievalScores:
    """Retrieval metrics of one ranked list for one question (see the module docstring)."""

    level: Level
    recall: dict[int, float]
    hit: dict[int, float]
    mrr: float
    recall_all: float
    words: int

    def flat(self) -> dict[str, float]:
        """``{"recall@2": ..., "hit@2": ..., "mrr": ..., "recall@all": ..., "words": ...}``."""
        out = {f"recall@{k}": v for k, v in self.recall.items()}
        out |= {f"hit@{k}": v for k, v in self.hit.items()}
        return out | {"mrr": self.mrr, "recall@all": self.recall_all, "words": float(self.words)}


def gold_items(example: QAExample) -> tuple[Level, set[GoldKey]]:
    """The gold evidence of ``example`` and its level."""
    if example.supporting_sentences:
        by_title: dict[str, int] = {}
        for i, passage in enumerate(example.passages):
            by_title.setdefault(passage.title, i)
        gold: set[GoldKey] = set()
        for fact in example.supporting_sentences:
            p = by_title.get(fact.title, -1)
            if p >= 0 and fact.index >= len(example.passages[p].sentence_spans):
                continue  # index past the passage's last sentence: dropped
            gold.add((p, fact.index))
        return "sentence", gold
    return "paragraph", {(p, -1) for p in example.supporting_passages}


def covers(unit: Unit, passages: Sequence[Passage], level: Level) -> set[GoldKey]:
    """The gold keys a retrieved unit can cover at ``level``."""
    if level == "paragraph":
        return {(unit.passage, -1)}
    spans = passages[unit.passage].sentence_spans
    return {(unit.passage, j) for j, (a, b) in enumerate(spans) if a < unit.end and unit.start < b}


def retrieval_scores(
    example: QAExample, units: Sequence[Unit], ks: Iterable[int] = (2, 5)
) -> RetrievalScores:
    """Scores of the ranked ``units`` (retrieved from ``example.passages``) for ``example``."""
    level, gold = gold_items(example)
    covered_by = [covers(u, example.passages, level) & gold for u in units]
    return _scores(level, covered_by, gold, units, ks)


def _scores(
    level: Level,
    covered_by: Sequence[set[Any]],
    gold: set[Any],
    units: Sequence[Unit],
    ks: Iterable[int],
) -> RetrievalScores:
    """The metrics of a ranked list, given which gold items each unit covers."""
    recall, hit = {}, {}
    for k in ks:
        got = set().union(*covered_by[:k]) if covered_by[:k] else set()
        recall[k] = len(got) / len(gold) if gold else 0.0
        hit[k] = 1.0 if gold and got == gold else 0.0
    first = next((rank for rank, c in enumerate(covered_by, 1) if c), None)
    everything = set().union(*covered_by) if covered_by else set()
    return RetrievalScores(
        level=level,
        recall=recall,
        hit=hit,
        mrr=1.0 / first if first else 0.0,
        recall_all=len(everything) / len(gold) if gold else 0.0,
        words=sum(len(u.text.split()) for u in units),
    )


def gold_titles(example: QAExample) -> set[str]:
    """The titles of the passages holding ``example``'s gold evidence."""
    if example.supporting_sentences:
        return {fact.title for fact in example.supporting_sentences}
    return {example.passages[p].title for p in example.supporting_passages}


def title_retrieval_scores(
    example: QAExample, units: Sequence[Unit], ks: Iterable[int] = (2, 5)
) -> RetrievalScores:
    """Scores of ``units`` retrieved from a shared corpus, against the gold passages mapped by
    title (HippoRAG's passage recall in the shared-corpus setting): a unit covers the gold
    passage whose title it carries. Paragraph level, whatever the dataset's own level."""
    gold = gold_titles(example)
    covered_by = [{u.title} & gold for u in units]
    return _scores("paragraph", covered_by, gold, units, ks)


# --------------------------------------------------------------------------- QA answers

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO = {"yes", "no", "noanswer"}
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(c for c in text if c not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _raw(text: str) -> str:
    return " ".join(text.strip().lower().split())


def answer_em(prediction: str, gold: str) -> float:
    """Exact match after normalisation (a gold that normalises to "" is compared raw)."""
    prediction = prediction.strip().rstrip(".")
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if not g:
        return float(_raw(prediction) == _raw(gold) and bool(_raw(gold)))
    return float(p == g)


def answer_f1(prediction: str, gold: str) -> float:
    """Token F1 after normalisation, with the yes/no rule: if either side normalises to yes,
    no or noanswer and they differ, 0. A gold that normalises to "" ("A", "the") is compared
    raw, so it neither scores every prediction 1 nor scores its own text 0."""
    prediction = prediction.strip().rstrip(".")
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if not g:
        return answer_em(prediction, gold)
    if (p in _YES_NO or g in _YES_NO) and p != g:
        return 0.0
    common = Counter(p.split()) & Counter(g.split())
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(p.split()), overlap / len(g.split())
    return 2 * precision * recall / (precision + recall)


def qa_scores(prediction: str, answers: Sequence[str]) -> tuple[float, float]:
    """(EM, F1) of ``prediction``: the best over the gold answer and its aliases."""
    golds = [a for a in answers if a.strip()]
    if not golds:
        return 0.0, 0.0
    return max(answer_em(prediction, g) for g in golds), max(
        answer_f1(prediction, g) for g in golds
    )
