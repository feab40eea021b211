"""Did the walk go on where it had to? ChainRAG's walks split by whether their seeds already
held the gold evidence still missing, from a run's traces, its questions and its indexes.

    chainrag walks docs/runs/long-musique/ansint --gold

For each walk (one sub-question's expansion, in the question's order) the gold paragraphs
**still missing** are the question's gold paragraphs (its supporting paragraphs, or the
paragraphs of its supporting sentences) that no earlier step of the question retrieved. The
walk is then one of three:

* **nothing missing**: every gold paragraph was retrieved before it;
* **gold at the seeds**: its seed units hold a missing gold paragraph;
* **gold not at the seeds**: they hold none, so a walk that stops at once cannot reach one
  (issue 49 asks that at least a third of these go past the first hop).

For the last two it counts walks past the first hop (``hops >= 2``: the judge said "no" after
the first expansion and the walk went on) and walks whose units, by the end, hold a missing gold
paragraph. A sub-question is not mapped to a gold step (ChainRAG's decomposition is the LLM's,
not the dataset's), so "missing" is the question's, not the sub-question's: a walk for the
second hop counts as "gold at the seeds" when its seeds hold the first hop's paragraph that no
earlier walk found.

The unit numbers of a trace point into the question's index, which is read from the index cache
(``--build-index`` builds a missing one with the recipe's models); a walk whose index or
question cannot be read is counted as unreadable.

``--list`` (:func:`walks_listing`) then shows each walk without the missing gold at its seeds:
the sub-question as searched, its hops, the judge's verdicts and scores, whether it reached a
missing gold paragraph and the sub-answer, to read why a walk stopped where it did.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs

from chainrag.analysis.walks import kept
from chainrag.core.types import Expansion, QAExample, StepTrace
from chainrag.data.metrics import gold_items
from chainrag.index.build import IndexCache
from chainrag.run.reading import Run, find_runs
from chainrag.run.reading import walks as walks_of
from chainrag.run.sources import Examples, Indexes, Progress, Unavailable, Unit


@attrs.frozen
class GoldWalks:
    """Walks counted by where the missing gold was (see the module docstring)."""

    walks: int
    unreadable: int = 0
    nothing_missing: int = 0
    at_seeds: int = 0
    at_seeds_on: int = 0  # of those, past the first hop
    at_seeds_found: int = 0  # of those, a missing gold paragraph in the walk's units
    not_at_seeds: int = 0
    not_at_seeds_on: int = 0
    not_at_seeds_found: int = 0

    def __add__(self, other: GoldWalks) -> GoldWalks:
        pairs = zip(attrs.astuple(self), attrs.astuple(other), strict=True)
        return GoldWalks(*(a + b for a, b in pairs))


def gold_paragraphs(example: QAExample) -> frozenset[int]:
    """The passages that hold the question's gold evidence."""
    _, keys = gold_items(example)
    return frozenset(p for p, _ in keys if p >= 0)


@attrs.frozen
class Walk:
    """One walk of a question, with where the gold still missing before it was."""

    step: StepTrace
    expansion: Expansion  # the step's
    where: Literal["nothing missing", "at seeds", "not at seeds"]
    reached: bool  # a missing gold paragraph is in the walk's units by its end

    @property
    def on(self) -> bool:
        """Whether the walk went past the first hop."""
        return self.expansion.hops >= 2


@attrs.frozen
class QuestionWalks:
    """One question's walks (``None``: its example or index could not be read, with the number
    of walks it had)."""

    qid: str
    walks: list[Walk] | None
    count: int


def classify_walks(
    steps: Sequence[StepTrace], units: Sequence[Unit], gold: frozenset[int]
) -> list[Walk]:
    """The walks of one question's ``steps`` (units of its index ``units``; ``gold``: its gold
    passages), each with where the missing gold was."""
    found: set[int] = set()
    walks: list[Walk] = []

    def passages(ids: Sequence[int]) -> set[int]:
        return {units[i].passage for i in ids if 0 <= i < len(units)}

    for step in steps:
        walk = step.expansion
        if walk is not None:
            missing = gold - found
            reached = bool(passages(walk.units) & missing)
            if not missing:
                walks.append(Walk(step, walk, "nothing missing", reached=False))
            elif passages(walk.seeds) & missing:
                walks.append(Walk(step, walk, "at seeds", reached))
            else:
                walks.append(Walk(step, walk, "not at seeds", reached))
        found |= passages(step.retrieved)
    return walks


def question_walks(run: Run, examples: Examples, indexes: Indexes) -> list[QuestionWalks]:
    """The walks of every question of ``run`` that has any."""
    out = []
    for record in run.records:
        count = len(walks_of(record))
        if not count:
            continue
        example = examples.example(run, record.id)
        units = indexes.units(run, example) if isinstance(example, QAExample) else example
        if isinstance(units, Unavailable) or not isinstance(example, QAExample):
            out.append(QuestionWalks(record.id, None, count))
        else:
            walks = classify_walks(record.trace.steps, units.units, gold_paragraphs(example))
            out.append(QuestionWalks(record.id, walks, count))
    return out


def gold_walks(run: Run, examples: Examples, indexes: Indexes) -> GoldWalks:
    """The walks of every question of ``run``, counted."""
    return _counted(question_walks(run, examples, indexes))


def _counted(questions: Sequence[QuestionWalks]) -> GoldWalks:
    total = GoldWalks(walks=0)
    for q in questions:
        if q.walks is None:
            total += GoldWalks(walks=q.count, unreadable=q.count)
        else:
            total += tally(q.walks)
    return total


def tally(walks: Sequence[Walk]) -> GoldWalks:
    """``walks`` counted by where the missing gold was (and whether the walk reached it)."""
    total = GoldWalks(walks=0)
    for w in walks:
        on, reached = int(w.on), int(w.reached)
        if w.where == "nothing missing":
            total += GoldWalks(walks=1, nothing_missing=1)
        elif w.where == "at seeds":
            total += GoldWalks(walks=1, at_seeds=1, at_seeds_on=on, at_seeds_found=reached)
        else:
            total += GoldWalks(walks=1, not_at_seeds=1, not_at_seeds_on=on,
                               not_at_seeds_found=reached)  # fmt: skip
    return total


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def walks_listing(label: str, questions: Sequence[QuestionWalks]) -> list[str]:
    """A markdown table, headed by ``label`` (a run), of one row per walk of ``questions``
    whose missing gold was not at its seeds."""
    lines = [
        f"\n{label}: the walks without the missing gold at their seeds",
        "",
        "| question | sub-question (as searched) | hops | judge | reached | sub-answer |",
        "|---" * 6 + "|",
    ]
    for q in questions:
        for w in q.walks or ():
            if w.where != "not at seeds":
                continue
            asked = w.step.rewritten or w.step.question
            verdicts = ", ".join(
                ("yes" if v.ok else "no") + (f" {v.score:.3f}" if v.score is not None else "")
                for v in w.expansion.verdicts
            )
            answer = w.step.answer.answer if w.step.answer is not None else "–"
            lines.append(
                f"| {q.qid} | {_cell(asked)} | {w.expansion.hops} | {verdicts or '–'} "
                f"| {'yes' if w.reached else 'no'} | {_cell(answer)} |"
            )
    return lines


def _share(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.0f}%)" if whole else "–"


def gold_walks_table(
    folders: Sequence[Path],
    *,
    build_index: bool = False,
    listing: bool = False,
    only: frozenset[str] | None = None,
    first: int | None = None,
    progress: Progress | None = None,
) -> str:
    """One markdown row per run: its walks by where the missing gold was (over its ``first``
    questions and those in ``only``, when given); with ``listing``, then one table per run of
    its walks without the missing gold at their seeds."""
    examples, indexes = Examples(), Indexes(IndexCache(), build=build_index, progress=progress)
    lines = [
        "| run | walks | unreadable | nothing missing | gold at seeds | past hop 1 | reached "
        "| gold not at seeds | past hop 1 | reached |",
        "|---" * 10 + "|",
    ]
    listed: list[str] = []
    for run in find_runs(list(folders)):
        if only is not None or first is not None:
            run = attrs.evolve(run, records=tuple(kept(run.records, only, first)))
        questions = question_walks(run, examples, indexes)
        g = _counted(questions)
        lines.append(
            f"| {run.folder} | {g.walks} | {g.unreadable} | {g.nothing_missing} | {g.at_seeds} "
            f"| {_share(g.at_seeds_on, g.at_seeds)} | {_share(g.at_seeds_found, g.at_seeds)} "
            f"| {g.not_at_seeds} | {_share(g.not_at_seeds_on, g.not_at_seeds)} "
            f"| {_share(g.not_at_seeds_found, g.not_at_seeds)} |"
        )
        if listing:
            listed += walks_listing(str(run.folder), questions)
    notes = [f"\n{note}" for note in examples.notes.values()]
    return "\n".join(lines + listed + notes)
