"""How much could choosing between ChainRAG's two answers gain, and do LLM-free choices find it?

    .venv/bin/python scripts/selector_screen.py                 # docs/runs, the three long sets
    .venv/bin/python scripts/selector_screen.py --runs DIR --sets long-musique long-2wiki
    .venv/bin/python scripts/selector_screen.py --grounded --build-index   # + the evidence rule

An offline screen for issue 49's item 3, made from run folders already on disk: no LLM call
(and no index but with ``--grounded``). Paper-faithful ChainRAG (run ``ansint``) answers every
question twice, with AnsInt and with CxtInt; a recipe that took the better of the two on each
question would gain what the "oracle" row shows over CxtInt. Each other row is a rule that
chooses per question, from answers the runs already hold, with nothing read from the
question's wording:

- ``vote with RUN``: the answer two of CxtInt, AnsInt and that baseline run's answer agree on
  (after SQuAD normalisation), else CxtInt. A recipe doing this makes the baseline's request
  too (NaiveRAG one more request a question; Iter-RetGen three).
- ``agrees with the last sub-answer``: the one of CxtInt and AnsInt that equals the last
  sub-question's answer, else CxtInt; no request more.
- ``the one in the evidence read`` (with ``--grounded``): AnsInt where its answer occurs in the
  text ChainRAG retrieved for the question (every step's units, SQuAD-normalised, as whole
  words) and CxtInt's does not, else CxtInt; no request more. It reads each question's index
  from the index cache (``--build-index`` builds a missing one with the run's recipe, about a
  second a question), and prints where the two answers differ, how many of them each answer
  occurs in.

Each row is scored against CxtInt on the same questions (paired bootstrap, sign test:
:mod:`chainrag.report.stats`), per set and pooled. The rows are derived from earlier runs, not
run, and they chose nothing: they say whether a rule is worth making into a recipe and running.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from chainrag.analysis.paired import load
from chainrag.analysis.records import predictions_file
from chainrag.data.metrics import normalize_answer, qa_scores
from chainrag.index.build import IndexCache
from chainrag.report.runs import Run, load_run
from chainrag.report.stats import paired
from chainrag.run.files import RunError
from chainrag.run.record import RunRecord
from chainrag.view.sources import Examples, Indexes, Unavailable

SETS = ("long-musique", "long-2wiki", "long-hotpotqa")
BASELINES = ("naive", "naive_qd", "iter_retgen")


@attrs.frozen
class Known:
    """What a choice may read of a question besides ChainRAG's record."""

    others: Mapping[str, str]  # baseline run name -> its answer
    evidence: str | None = None  # the text ChainRAG retrieved, normalised (with --grounded)


Choice = Callable[[RunRecord, Known], str]
"""(ChainRAG's record of a question, what else is known of it) -> the chosen text."""


def vote(baseline: str) -> Choice:
    """CxtInt, AnsInt and ``baseline``'s answer: the one two agree on, else CxtInt."""

    def choose(record: RunRecord, known: Known) -> str:
        cxt, ans = record.answers["cxtint"].text, record.answers["ansint"].text
        third = known.others.get(baseline, "")
        n_cxt, n_ans, n_third = (normalize_answer(t) for t in (cxt, ans, third))
        if n_ans and n_ans != n_cxt and n_ans == n_third:
            return ans
        return cxt

    return choose


def last_sub_answer(record: RunRecord, known: Known) -> str:
    """The one of CxtInt and AnsInt that equals the last sub-question's answer, else CxtInt."""
    answered = [s.answer.answer for s in record.trace.steps if s.answer is not None]
    last = normalize_answer(answered[-1]) if answered else ""
    cxt, ans = record.answers["cxtint"].text, record.answers["ansint"].text
    if last and normalize_answer(ans) == last != normalize_answer(cxt):
        return ans
    return cxt


def occurs(answer: str, evidence: str) -> bool:
    """Whether ``answer``, normalised, occurs in the normalised ``evidence`` as whole words."""
    words = normalize_answer(answer)
    return bool(words) and f" {words} " in f" {evidence} "


def grounded(record: RunRecord, known: Known) -> str:
    """AnsInt where its answer occurs in the evidence read and CxtInt's does not, else CxtInt."""
    cxt, ans = record.answers["cxtint"].text, record.answers["ansint"].text
    if known.evidence is None:
        raise ValueError(f"question {record.id}: no evidence text to look the answers up in")
    if occurs(ans, known.evidence) and not occurs(cxt, known.evidence):
        return ans
    return cxt


def oracle(record: RunRecord, known: Known) -> str:
    """The better scored of CxtInt and AnsInt (an upper bound: it reads the gold)."""
    cxt, ans = record.answers["cxtint"], record.answers["ansint"]
    return ans.text if ans.f1 > cxt.f1 else cxt.text


def rows(with_evidence: bool = False) -> dict[str, Choice]:
    out: dict[str, Choice] = {"oracle (reads the gold; a bound)": oracle}
    out |= {f"vote with {b}": vote(b) for b in BASELINES}
    out["agrees with the last sub-answer"] = last_sub_answer
    if with_evidence:
        out["the one in the evidence read"] = grounded
    return out


class Evidence:
    """The text ChainRAG retrieved for each question of a run folder, from its indexes."""

    def __init__(self, build: bool) -> None:
        self.examples = Examples()
        self.indexes = Indexes(IndexCache(), build=build, progress=self.say)

    @staticmethod
    def say(message: str) -> None:
        print(f"selector_screen: {message}", file=sys.stderr)

    def texts(self, run: Run) -> dict[str, str]:
        """Question id -> the normalised text of every unit its steps retrieved."""
        out: dict[str, str] = {}
        for record in run.records:
            example = self.examples.example(run, record.id)
            units = (
                example if isinstance(example, Unavailable) else self.indexes.units(run, example)
            )
            if isinstance(units, Unavailable):
                hint = "" if self.indexes.build else " (here: run again with --build-index)"
                raise RunError(f"{run.folder}, question {record.id}: {units.reason}{hint}")
            ids = dict.fromkeys(i for step in record.trace.steps for i in step.retrieved)
            out[record.id] = normalize_answer(" ".join(units.units[i].text for i in ids))
        return out


def screen(runs: Path, sets: Sequence[str], evidence: Evidence | None = None) -> list[list[str]]:
    """The table's rows: CxtInt, then each choice: its F1 per set and pooled, and its paired
    difference from CxtInt pooled (with ``evidence``, the grounded choice too, and a last row
    counting where the two answers differ which of them occur in the evidence)."""
    base: dict[str, list[float]] = {}
    choices = rows(evidence is not None)
    chosen: dict[str, dict[str, list[float]]] = {label: {} for label in choices}
    found: Counter[tuple[bool, bool]] = Counter()
    for name in sets:
        predictions_file(runs / name / "ansint")
        chainrag = load_run(runs / name / "ansint")
        answers = {b: {r.id: r.scored.text for r in load(runs / name / b)[1]} for b in BASELINES}
        texts = evidence.texts(chainrag) if evidence is not None else {}
        for record in chainrag.records:
            missing = [b for b in BASELINES if record.id not in answers[b]]
            if missing:
                raise RunError(f"{runs / name}: {', '.join(missing)} did not answer {record.id}")
            known = Known({b: answers[b][record.id] for b in BASELINES}, texts.get(record.id))
            base.setdefault(name, []).append(record.answers["cxtint"].f1)
            for label, choose in choices.items():
                f1 = qa_scores(choose(record, known), record.gold)[1]
                chosen[label].setdefault(name, []).append(f1)
            ans, cxt = (record.answers[a].text for a in ("ansint", "cxtint"))
            if known.evidence is not None and normalize_answer(ans) != normalize_answer(cxt):
                found[occurs(ans, known.evidence), occurs(cxt, known.evidence)] += 1

    def means(per_set: Mapping[str, list[float]]) -> list[str]:
        pooled = [f for n in sets for f in per_set[n]]
        return [f"{100 * sum(v) / len(v):.2f}" for v in (*(per_set[n] for n in sets), pooled)]

    pooled_base = [f for n in sets for f in base[n]]
    table = [["CxtInt (ChainRAG)", *means(base), "", ""]]
    for label, per_set in chosen.items():
        p = paired(pooled_base, [f for n in sets for f in per_set[n]])
        table.append([label, *means(per_set), f"{p.delta:+.2f} [{p.low:+.1f}, {p.high:+.1f}]",
                      f"{p.better} / {p.worse} / {p.same}"])  # fmt: skip
    if evidence is not None:
        split = ", ".join(f"{label} {found[key]}" for key, label in (
            ((True, True), "both"), ((True, False), "AnsInt's only"),
            ((False, True), "CxtInt's only"), ((False, False), "neither")))  # fmt: skip
        table.append([f"answers differ: {sum(found.values())}; in the evidence read: {split}"])
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=Path, default=Path("docs/runs"), help="the sets' parent folder (docs/runs)"
    )
    parser.add_argument(
        "--sets", nargs="+", default=list(SETS), help=f"the sets' folders ({' '.join(SETS)})"
    )
    parser.add_argument(
        "--grounded",
        action="store_true",
        help="add the choice by whether each answer occurs in the evidence read (reads indexes)",
    )
    parser.add_argument(
        "--build-index",
        action="store_true",
        help="with --grounded: build a question's index missing from the index cache",
    )
    args = parser.parse_args(argv)
    if args.build_index and not args.grounded:
        parser.error("--build-index applies to --grounded only")
    try:
        table = screen(args.runs, args.sets, Evidence(args.build_index) if args.grounded else None)
    except RunError as e:
        print(f"selector_screen: {e}", file=sys.stderr)
        return 2
    head = ["choice", *args.sets, "pooled", "− CxtInt pooled [95%]", "better / worse / same"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in table:
        print("| " + " | ".join(row) + " |" if len(row) > 1 else f"\n{row[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
