"""How much could choosing between ChainRAG's two answers gain, and do LLM-free choices find it?

    .venv/bin/python scripts/selector_screen.py                 # docs/runs, the three long sets
    .venv/bin/python scripts/selector_screen.py --runs DIR --sets long-musique long-2wiki

An offline screen for issue 49's item 3, made from run folders already on disk: no LLM call, no
index. Paper-faithful ChainRAG (run ``ansint``) answers every question twice, with AnsInt and
with CxtInt; a recipe that took the better of the two on each question would gain what the
"oracle" row shows over CxtInt. Each other row is a rule that chooses per question, from
answers the runs already hold, with nothing read from the question's wording:

- ``vote with RUN``: the answer two of CxtInt, AnsInt and that baseline run's answer agree on
  (after SQuAD normalisation), else CxtInt. A recipe doing this makes the baseline's request
  too (NaiveRAG one more request a question; Iter-RetGen three).
- ``agrees with the last sub-answer``: the one of CxtInt and AnsInt that equals the last
  sub-question's answer, else CxtInt; no request more.

Each row is scored against CxtInt on the same questions (paired bootstrap, sign test:
:mod:`chainrag.report.stats`), per set and pooled. The rows are derived from earlier runs, not
run, and they chose nothing: they say whether a rule is worth making into a recipe and running.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from chainrag.analysis.paired import load
from chainrag.data.metrics import normalize_answer, qa_scores
from chainrag.report.stats import paired
from chainrag.run.files import RunError
from chainrag.run.record import RunRecord

SETS = ("long-musique", "long-2wiki", "long-hotpotqa")
BASELINES = ("naive", "naive_qd", "iter_retgen")

Choice = Callable[[RunRecord, Mapping[str, str]], str]
"""(ChainRAG's record of a question, baseline run name -> its answer) -> the chosen text."""


def vote(baseline: str) -> Choice:
    """CxtInt, AnsInt and ``baseline``'s answer: the one two agree on, else CxtInt."""

    def choose(record: RunRecord, others: Mapping[str, str]) -> str:
        cxt, ans = record.answers["cxtint"].text, record.answers["ansint"].text
        third = others.get(baseline, "")
        n_cxt, n_ans, n_third = (normalize_answer(t) for t in (cxt, ans, third))
        if n_ans and n_ans != n_cxt and n_ans == n_third:
            return ans
        return cxt

    return choose


def last_sub_answer(record: RunRecord, others: Mapping[str, str]) -> str:
    """The one of CxtInt and AnsInt that equals the last sub-question's answer, else CxtInt."""
    answered = [s.answer.answer for s in record.trace.steps if s.answer is not None]
    last = normalize_answer(answered[-1]) if answered else ""
    cxt, ans = record.answers["cxtint"].text, record.answers["ansint"].text
    if last and normalize_answer(ans) == last != normalize_answer(cxt):
        return ans
    return cxt


def oracle(record: RunRecord, others: Mapping[str, str]) -> str:
    """The better scored of CxtInt and AnsInt (an upper bound: it reads the gold)."""
    cxt, ans = record.answers["cxtint"], record.answers["ansint"]
    return ans.text if ans.f1 > cxt.f1 else cxt.text


def rows() -> dict[str, Choice]:
    out: dict[str, Choice] = {"oracle (reads the gold; a bound)": oracle}
    out |= {f"vote with {b}": vote(b) for b in BASELINES}
    out["agrees with the last sub-answer"] = last_sub_answer
    return out


def screen(runs: Path, sets: Sequence[str]) -> list[list[str]]:
    """The table's rows: CxtInt, then each choice: its F1 per set and pooled, and its paired
    difference from CxtInt pooled."""
    base: dict[str, list[float]] = {}
    choices = rows()
    chosen: dict[str, dict[str, list[float]]] = {label: {} for label in choices}
    for name in sets:
        _, records = load(runs / name / "ansint")
        answers = {b: {r.id: r.scored.text for r in load(runs / name / b)[1]} for b in BASELINES}
        for record in records:
            missing = [b for b in BASELINES if record.id not in answers[b]]
            if missing:
                raise RunError(f"{runs / name}: {', '.join(missing)} did not answer {record.id}")
            others = {b: answers[b][record.id] for b in BASELINES}
            base.setdefault(name, []).append(record.answers["cxtint"].f1)
            for label, choose in choices.items():
                f1 = qa_scores(choose(record, others), record.gold)[1]
                chosen[label].setdefault(name, []).append(f1)

    def means(per_set: Mapping[str, list[float]]) -> list[str]:
        pooled = [f for n in sets for f in per_set[n]]
        return [f"{100 * sum(v) / len(v):.2f}" for v in (*(per_set[n] for n in sets), pooled)]

    pooled_base = [f for n in sets for f in base[n]]
    table = [["CxtInt (ChainRAG)", *means(base), "", ""]]
    for label, per_set in chosen.items():
        p = paired(pooled_base, [f for n in sets for f in per_set[n]])
        table.append([label, *means(per_set), f"{p.delta:+.2f} [{p.low:+.1f}, {p.high:+.1f}]",
                      f"{p.better} / {p.worse} / {p.same}"])  # fmt: skip
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=Path, default=Path("docs/runs"), help="the sets' parent folder (docs/runs)"
    )
    parser.add_argument(
        "--sets", nargs="+", default=list(SETS), help=f"the sets' folders ({' '.join(SETS)})"
    )
    args = parser.parse_args(argv)
    try:
        table = screen(args.runs, args.sets)
    except RunError as e:
        print(f"selector_screen: {e}", file=sys.stderr)
        return 2
    head = ["choice", *args.sets, "pooled", "− CxtInt pooled [95%]", "better / worse / same"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in table:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
