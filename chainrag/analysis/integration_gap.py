"""Where ChainRAG's two integrations part ways, question by question, from a run's traces.

For each question of a ChainRAG run: is AnsInt right, is CxtInt right (F1 ≥ 0.5 counts as
right), and does any sub-answer already hold a gold answer (after SQuAD normalisation, the
sub-answer contains it: "Richland County, SC" holds "Richland County", but "South Carolina"
does not hold "Richland County, South Carolina")? Then counts by case, so that a gap between
AnsInt and CxtInt can be put down to the sub-answers (none holds the answer) or to AnsInt's
final call (one does, and the final answer is still wrong).

    chainrag integration-gap docs/runs/musique/ansint [--right 0.5] [--list]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import attrs

from chainrag.analysis.records import predictions, reading
from chainrag.data.metrics import normalize_answer, qa_scores
from chainrag.run.record import RunRecord


def holds(text: str, answers: Sequence[str]) -> bool:
    """``text`` contains some gold answer, both normalised."""
    said = f" {normalize_answer(text)} "
    return any((gold := normalize_answer(a)) and f" {gold} " in said for a in answers)


def _word(flag: bool, yes: str = "right", no: str = "wrong") -> str:
    return yes if flag else no


@attrs.frozen
class Split:
    """One question: which integrations are right, and whether a sub-answer holds the gold."""

    id: str
    ansint: bool
    cxtint: bool
    in_sub_answers: bool
    gold: tuple[str, ...]
    sub_answers: tuple[str, ...]
    steps: int

    @property
    def case(self) -> tuple[str, str, str]:
        """(AnsInt right/wrong, CxtInt right/wrong, a sub-answer holds the gold yes/no)."""
        return (_word(self.ansint), _word(self.cxtint), _word(self.in_sub_answers, "yes", "no"))

    def line(self) -> str:
        """One tab-separated line for ``--list``."""
        ans, cxt, held = self.case
        gold = self.gold[0] if self.gold else ""
        return (f"{self.id}\tAnsInt {ans}\tCxtInt {cxt}\tin sub-answers {held}\t"
                f"gold {gold!r}\tsub-answers {list(self.sub_answers)}")  # fmt: skip


def split_question(record: RunRecord, right: float) -> Split:
    """The split of one ChainRAG record; ValueError if it has no AnsInt and CxtInt answers."""
    gold = record.gold
    texts = {a.name: a.answer.text for a in record.trace.answers}
    notes = record.trace.notes
    names = [notes.answer_of(kind) if notes else None for kind in ("ans_int", "cxt_int")]
    if not all(name in texts for name in names):
        raise ValueError(f"question {record.id} has no AnsInt and CxtInt answers")
    ansint, cxtint = (qa_scores(texts[str(k)], gold)[1] >= right for k in names)
    steps = record.trace.steps
    subs = tuple(s.answer.answer for s in steps if s.answer is not None)
    return Split(record.id, ansint, cxtint, any(holds(s, gold) for s in subs), gold, subs,
                 len(steps))  # fmt: skip


@attrs.frozen
class IntegrationGap:
    """A run's questions split by which integration is right (F1 ≥ ``right``)."""

    folder: Path
    right: float
    splits: tuple[Split, ...]

    def cases(self) -> list[tuple[tuple[str, str, str], int]]:
        """Each case with its number of questions, the most frequent first."""
        counted = Counter(s.case for s in self.splits)
        return sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))

    def markdown(self, *, listing: bool = False) -> str:
        """The cases as a table; with ``listing``, one line per question before it."""
        n = len(self.splits)
        lines = [s.line() for s in self.splits] if listing else []
        lines += [
            f"{self.folder}: {n} questions, {sum(s.steps for s in self.splits) / n:.1f} steps "
            f"each on average (right = F1 ≥ {self.right})\n",
            "| AnsInt | CxtInt | a sub-answer holds the gold answer | questions |",
            "|---|---|---|---|",
        ]
        lines += [f"| {a} | {c} | {h} | {count} |" for (a, c, h), count in self.cases()]
        return "\n".join(lines)


def integration_gap(folder: Path, *, right: float = 0.5) -> IntegrationGap:
    """The split of every question of a ChainRAG run folder; a RunError naming the folder if
    it is not a run or a question lacks AnsInt's and CxtInt's answers."""
    records = predictions(folder)
    with reading(folder):
        return IntegrationGap(folder, right, tuple(split_question(r, right) for r in records))
