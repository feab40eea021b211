"""How much could choosing between ChainRAG's two answers gain, and do LLM-free choices find it?

    .venv/bin/python scripts/selector_screen.py                 # docs/runs, the three long sets
    .venv/bin/python scripts/selector_screen.py --runs DIR --sets long-musique long-2wiki
    .venv/bin/python scripts/selector_screen.py --grounded --build-index   # + the evidence rule
    .venv/bin/python scripts/selector_screen.py --margins one_hop_choose_verify --sets A B

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

``--margins RUN`` prints another table: how a run of ``choose`` by ``verify`` (RUN, say
``one_hop_choose_verify``) would have chosen at each ``margin`` (:data:`MARGINS`): AnsInt's
answer only where its P(yes) is above CxtInt's by more than the margin (in a run with
``calibrate``, its rise in P(yes) from the passages above CxtInt's). The two values weighed are
read from each answer's pick (:attr:`~chainrag.core.types.Pick.weighed`), the two
answers from the run ``--pairs`` (``one_hop``: the same requests without the choice), and each
row is scored against that run's CxtInt. The margin with the highest pooled F1 (the smaller on
a tie) is named last: a margin is chosen this way on training questions, never on dev.

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
from chainrag.data.metrics import normalize_answer, qa_scores
from chainrag.index.build import IndexCache
from chainrag.report.stats import paired
from chainrag.run.files import RunError
from chainrag.run.reading import Run, load_run, predictions_file
from chainrag.run.record import RunRecord
from chainrag.run.sources import Examples, Indexes, Unavailable

SETS = ("long-musique", "long-2wiki", "long-hotpotqa")
BASELINES = ("naive", "naive_qd", "iter_retgen")
MARGINS = tuple(round(0.025 * i, 3) for i in range(13))  # 0, 0.025, ..., 0.3


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


@attrs.frozen
class Weighed:
    """One question of a ``choose`` by ``verify`` run, beside the two answers it chose from."""

    cxtint: float  # F1 of the first answer (CxtInt's)
    ansint: float  # F1 of the second (AnsInt's)
    chosen: float  # F1 of the run's own answer
    shares: tuple[float, float] | None  # P(yes) (or its rise) for (first, second); None: not asked

    def takes_second(self, margin: float) -> bool:
        """Whether the P(yes) asks, at ``margin``, take AnsInt's answer."""
        return self.shares is not None and self.shares[1] > self.shares[0] + margin

    def f1(self, margin: float) -> float:
        """F1 of the answer ``choose`` takes at ``margin``."""
        if self.shares is None:  # agreement or a misfit decided it, whatever the margin
            return self.chosen
        return self.ansint if self.takes_second(margin) else self.cxtint


def weighed(runs: Path, name: str, verify: str, pairs: str) -> list[Weighed]:
    """Set ``name``'s questions of run ``verify``, each with run ``pairs``' two answers."""
    _, records = load(runs / name / verify)
    _, both = load(runs / name / pairs)
    answers = {r.id: r.answers for r in both}
    out = []
    for record in records:
        if record.id not in answers:
            raise RunError(f"{runs / name / pairs}: did not answer {record.id}")
        cxt, ans = answers[record.id].get("cxtint"), answers[record.id].get("ansint")
        if cxt is None or ans is None:
            raise RunError(f"{runs / name / pairs}: no cxtint and ansint answers to choose from")
        named = [a for a in record.trace.answers if a.name == "choose"]
        if not named:
            raise RunError(f"{runs / name / verify}: {record.id} has no `choose` answer")
        chosen = record.answers["choose"].text
        if normalize_answer(chosen) not in {normalize_answer(cxt.text), normalize_answer(ans.text)}:
            raise RunError(
                f"{runs / name / verify}: {record.id} chose {chosen!r}, neither of {pairs}'s "
                f"answers ({cxt.text!r}, {ans.text!r}): the two runs did not make the same requests"
            )
        picks = named[0].answer.picks
        shares = picks[0].weighed if picks else None
        out.append(Weighed(cxt.f1, ans.f1, record.answers["choose"].f1, shares))
    return out


def margins(
    runs: Path, sets: Sequence[str], verify: str, pairs: str = "one_hop"
) -> tuple[list[list[str]], float]:
    """The rows of the margin table and the margin chosen (highest pooled F1; smaller on a tie)."""
    per_set = {name: weighed(runs, name, verify, pairs) for name in sets}
    pooled = [q for name in sets for q in per_set[name]]
    base = [q.cxtint for q in pooled]

    def mean(values: Sequence[float]) -> float:
        return 100 * sum(values) / len(values)

    table = [[f"CxtInt ({pairs})", *(f"{mean([q.cxtint for q in per_set[n]]):.2f}" for n in sets),
              f"{mean(base):.2f}", "", "", ""]]  # fmt: skip
    best, best_f1 = MARGINS[0], -1.0
    for margin in MARGINS:
        chosen = {n: [q.f1(margin) for q in per_set[n]] for n in sets}
        f1 = [f for n in sets for f in chosen[n]]
        p = paired(base, f1)
        taken = sum(q.takes_second(margin) for q in pooled)
        table.append([f"margin {margin:g}", *(f"{mean(chosen[n]):.2f}" for n in sets),
                      f"{mean(f1):.2f}", f"{p.delta:+.2f} [{p.low:+.1f}, {p.high:+.1f}]",
                      f"{p.better} / {p.worse} / {p.same}", str(taken)])  # fmt: skip
        if mean(f1) > best_f1 + 1e-9:
            best, best_f1 = margin, mean(f1)
    asked = sum(q.shares is not None for q in pooled)
    table.append([f"{len(pooled)} questions, P(yes) asked on {asked}; the margin with the highest "
                  f"pooled F1 (the smaller on a tie): {best:g}"])  # fmt: skip
    return table, best


def _parser() -> argparse.ArgumentParser:
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
    parser.add_argument(
        "--margins",
        metavar="RUN",
        help="instead: the table of margins for RUN, a run of choose by verify in each set",
    )
    parser.add_argument(
        "--pairs",
        metavar="RUN",
        default="one_hop",
        help="with --margins: the run holding the two answers RUN chose from (one_hop)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.build_index and not args.grounded:
        parser.error("--build-index applies to --grounded only")
    if args.margins and args.grounded:
        parser.error("--margins and --grounded make different tables: give one")
    try:
        if args.margins:
            table, _ = margins(args.runs, args.sets, args.margins, args.pairs)
        else:
            evidence = Evidence(args.build_index) if args.grounded else None
            table = screen(args.runs, args.sets, evidence)
    except RunError as e:
        print(f"selector_screen: {e}", file=sys.stderr)
        return 2
    head = ["choice", *args.sets, "pooled", "− CxtInt pooled [95%]", "better / worse / same"]
    if args.margins:
        head.append("AnsInt taken")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in table:
        print("| " + " | ".join(row) + " |" if len(row) > 1 else f"\n{row[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
