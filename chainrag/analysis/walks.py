"""What ChainRAG's graph walks did in a run, from its traces: sub-questions per question, how
many were rewritten (the trigger fired) and in how many the rewriter changed the text, the
sufficiency judge's verdicts, hops per walk, words per walk and how many walks the word budget
stopped.

    chainrag walks docs/runs/musique/ansint docs/runs/2wiki/ansint

A walk is one sub-question's expansion (seeds, then hops until the judge says "yes", the word
budget is spent or nothing new is reachable). A verdict is one sufficiency check; "unread"
counts replies that were neither yes nor no (read as "no": the walk goes on; a verdict's
``unread``); the ``none`` judge's verdicts are no check (``checked`` false) and not counted.
"Cut by budget" counts walks where a unit did not fit the word budget (records written before
it was kept do not say: they are counted apart as "not recorded").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from chainrag.core.types import StepTrace
from chainrag.run.files import RunError
from chainrag.run.reading import all_walks, predictions
from chainrag.run.record import RunRecord


@attrs.frozen
class WalkSummary:
    """Counts over a run's trace steps (see the module docstring); ``hops``: walks by hops."""

    questions: int
    sub_questions: int
    rewritten: int
    changed: int
    checks: int
    yes: int
    no: int
    unread: int
    walks: int
    hops: Mapping[int, int]
    words: float  # mean words per walk
    unanswered: int
    cut: int = 0  # walks the word budget stopped
    cut_unknown: int = 0  # walks whose record does not say (written before it was kept)


def changed(step: StepTrace) -> bool:
    """The step was rewritten and the rewriter changed its text (a small model often returns
    the sub-question as it was)."""
    return bool(step.rewritten) and str(step.rewritten).strip() != step.question.strip()


def summary(records: Sequence[RunRecord]) -> WalkSummary:
    """Counts over the records' trace steps."""
    steps = [s for r in records for s in r.trace.steps]
    walks = all_walks(records)
    verdicts = [v for w in walks for v in w.verdicts if v.checked]
    yes = sum(1 for v in verdicts if v.ok)
    return WalkSummary(
        questions=len(records),
        sub_questions=len(steps),
        rewritten=sum(1 for s in steps if s.rewritten),
        changed=sum(1 for s in steps if changed(s)),
        checks=len(verdicts),
        yes=yes,
        no=len(verdicts) - yes,
        unread=sum(1 for v in verdicts if v.unread),
        walks=len(walks),
        hops=dict(sorted(Counter(w.hops for w in walks).items())),
        words=sum(w.words for w in walks) / len(walks) if walks else 0.0,
        unanswered=sum(1 for s in steps if s.answer is not None and not s.answer.answered),
        cut=sum(1 for w in walks if w.budget_cut),
        cut_unknown=sum(1 for w in walks if w.budget_cut is None),
    )


def kept(
    records: Sequence[RunRecord], only: frozenset[str] | None = None, first: int | None = None
) -> list[RunRecord]:
    """The run's ``first`` records (in the order it answered them; all, with None) whose
    question is in ``only`` (any, with None)."""
    return [r for r in records[:first] if only is None or r.id in only]


def walks(
    folder: Path, only: frozenset[str] | None = None, first: int | None = None
) -> WalkSummary:
    """The walks of one run folder (of its ``first`` questions and of those in ``only``, when
    given: :func:`kept`); a RunError naming it if it is not a run or its records are not
    ChainRAG's."""
    return summary(kept(predictions(folder), only, first))


def shared_questions(folders: Sequence[Path], first: int | None = None) -> frozenset[str]:
    """The ids of the questions every run folder answered (among each one's ``first``, when
    given: the questions ``compare --first`` pairs); a RunError naming the folders when they
    share none."""
    ids = [{r.id for r in predictions(folder)[:first]} for folder in folders]
    shared = frozenset(set.intersection(*ids)) if ids else frozenset()
    if not shared:
        raise RunError(f"{', '.join(map(str, folders))}: no question answered by every run")
    return shared


def walks_table(
    folders: Sequence[Path], only: frozenset[str] | None = None, first: int | None = None
) -> str:
    """One markdown row per run folder (over its ``first`` questions and those in ``only``,
    when given)."""
    lines = [
        "| run | questions | sub-q/q | rewritten (text changed) | checks | yes | no (unread) "
        "| walks by hops | words/walk | cut by budget | sub-q not answered |",
        "|---" * 11 + "|",
    ]
    for folder in folders:
        s = walks(folder, only, first)
        hops = ", ".join(f"{h}: {n}" for h, n in s.hops.items()) or "–"
        if s.walks and s.cut_unknown == s.walks:
            cut = "not recorded"
        else:
            cut = str(s.cut) + (f" ({s.cut_unknown} not recorded)" if s.cut_unknown else "")
        lines.append(f"| {folder} | {s.questions} | {s.sub_questions / s.questions:.1f} "
                     f"| {s.rewritten} ({s.changed}) | {s.checks} | {s.yes} "
                     f"| {s.no} ({s.unread}) "
                     f"| {hops} | {s.words:.0f} | {cut} | {s.unanswered} |")  # fmt: skip
    return "\n".join(lines)
