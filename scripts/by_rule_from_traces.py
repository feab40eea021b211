"""What `by_rule` (recipes/variants/compare_by_rule.yaml) answers on finished ChainRAG runs.

    .venv/bin/python scripts/by_rule_from_traces.py RUN [RUN ...] [--answer cxtint]
        [--unchanged DATASET ...] [--ran NAME]

`by_rule` decides a two-choice comparison of dates or counts from the sub-answers, and gives
every other question to its fallback, paper-faithful CxtInt, whose request is then ansint.yaml's
word for word (tests/test_comparisons.py). So on a finished ansint.yaml run its answers follow
from the stored trace alone: the rule applied to each question's stored sub-answers, else the
run's own `--answer`. This prints, per run and pooled, the questions the rule decided, each one
it changed, and the paired difference against `--answer` (the 95% paired-bootstrap interval and
sign test of `chainrag compare`). It is a derivation from stored records, not a run: for a
run made anew, replay the recipe after ansint.yaml (`chainrag run ... --cache-mode use`).

`--unchanged DATASET` adds a dataset's questions (e.g. `long:musique[30:60]`) that no run of
this holds, as questions the rule cannot change: each must be no two-choice comparison the rule
reads (checked: it stops otherwise), so its fallback's answer is the paper's and the difference
0. For a pooled figure over sets where the rule cannot fire.

`--ran NAME` (e.g. compare_roles_by_rule) reads by_rule's answer from the recipe's own run
beside each RUN (RUN/../NAME) for every question that run holds, and derives the rest. A recipe
whose decomposer decides some questions by rule (`role_comparison`) asks them other things
than ansint.yaml did, so its answers there cannot be derived: each such question must be in
that run (checked: it stops otherwise), and `--unchanged` refuses them too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chainrag.components.reasoning.comparisons import (
    parse_comparison,
    role_sub_questions,
    rule_comparison,
)
from chainrag.data.datasets import load_dataset
from chainrag.data.metrics import answer_f1
from chainrag.report.stats import paired
from chainrag.run.reading import predictions
from chainrag.run.record import RunRecord


def rule_f1(record: RunRecord, answer: str) -> tuple[float, float, str | None]:
    """The run's ``answer`` F1, by_rule's F1, and by_rule's answer where the rule decided."""
    base = record.answers[answer].f1
    subs = [step.answer for step in record.trace.steps if step.answer is not None]
    decomposed = record.trace.decomposition
    ruling = rule_comparison(record.question, subs, decomposed.sub_questions if decomposed else ())
    if ruling is None:
        return base, base, None
    return base, max(answer_f1(ruling.answer, gold) for gold in record.gold), ruling.answer


def line(name: str, base: list[float], other: list[float], decided: int, means: bool = True) -> str:
    """A table row; ``means`` False leaves out the two F1 means (questions counted without
    their scores, ``--unchanged``, count in the difference only)."""
    p = paired(base, other)
    shown = f"{p.base:.2f} | {p.other:.2f}" if means else " | "
    return (f"| {name} | {p.n} | {decided} | {shown} | {p.delta:+.2f} "
            f"| [{p.low:+.1f}, {p.high:+.1f}] | {p.better} / {p.worse} / {p.same} "
            f"| {p.p_sign:.3f} |")  # fmt: skip


def ruled(record: RunRecord) -> tuple[float, str | None]:
    """A run of the recipe's: by_rule's F1, and its answer where the rule decided."""
    made = next(named.answer for named in record.trace.answers if named.name == "byrule")
    decided = bool(made.picks) and made.picks[0].took == "rule"
    return record.answers["byrule"].f1, made.text if decided else None


def ran(run: Path, name: str | None) -> dict[str, RunRecord]:
    """The records of the recipe's own run beside ``run`` (``run``/../``name``), by question
    id; none without ``name`` or that folder."""
    folder = run.parent / name if name else None
    if folder is None or not (folder / "predictions.jsonl").exists():
        return {}
    return {record.id: record for record in predictions(folder)}


def from_run(
    run: Path, answer: str, name: str | None = None
) -> tuple[list[float], list[float], int]:
    """The run's ``answer`` F1 and by_rule's, a question each, and how many the rule decided;
    prints each question whose score the rule changed. With ``name``, by_rule's answer is read
    from the recipe's own run where it holds the question (:func:`ran`)."""
    base, rule, decided = [], [], 0
    own = ran(run, name)
    for record in predictions(run):
        if answer not in record.answers:
            sys.exit(f"{run}: a record without the answer {answer!r}")
        if record.id in own:  # read, not derived
            b = record.answers[answer].f1
            r, said = ruled(own[record.id])
        elif name and role_sub_questions(record.question) is not None:
            sys.exit(f"{run}: {record.question!r} is decomposed by rule in {name}, which asks "
                     f"other sub-questions than this run did: run {name} on it")  # fmt: skip
        else:
            b, r, said = rule_f1(record, answer)
        base.append(b)
        rule.append(r)
        if said is not None:
            decided += 1
            if r != b:
                print(f"  {run.parent.name}: {record.question} → {said!r} "
                      f"(F1 {b:.2f} → {r:.2f}; gold {record.gold[0]!r})")  # fmt: skip
    return base, rule, decided


def unchanged(dataset: str) -> int:
    """How many questions ``dataset`` has; exits if the rule reads any of them."""
    questions = load_dataset(dataset)
    readable = [q.question for q in questions if parse_comparison(q.question) is not None]
    # role_sub_questions reads only comparisons, so this refuses those questions too
    if readable:
        sys.exit(f"{dataset}: {len(readable)} question(s) the rule may decide, e.g. "
                 f"{readable[0]!r}: run them instead")  # fmt: skip
    return len(questions)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])  # fmt: skip
    parser.add_argument("runs", nargs="+", type=Path, help="finished ansint.yaml-like runs")
    parser.add_argument(
        "--answer",
        default="cxtint",
        help="the run's answer by_rule falls back to (default: cxtint)",
    )
    parser.add_argument("--unchanged", action="append", default=[], metavar="DATASET",
                        help="a dataset's questions the rule cannot change (checked)")  # fmt: skip
    parser.add_argument("--ran", metavar="NAME",
                        help="the recipe's own run beside each RUN, read where it holds a "
                             "question (needed for a decomposer that decides by rule)")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pooled_base: list[float] = []
    pooled_rule: list[float] = []
    decided_all = 0
    rows = []
    for run in args.runs:
        base, rule, decided = from_run(run, args.answer, args.ran)
        rows.append(line(str(run), base, rule, decided))
        pooled_base += base
        pooled_rule += rule
        decided_all += decided
    for dataset in args.unchanged:
        n = unchanged(dataset)
        rows.append(f"| {dataset} (no comparison the rule reads) | {n} | 0 | | | +0.00 | | | |")
        pooled_base += [0.0] * n
        pooled_rule += [0.0] * n
    print(f"\nby_rule against the runs' {args.answer} (F1 in %, paired bootstrap as chainrag "
          "compare):\n")  # fmt: skip
    print("| run | n | decided by rule | F1 base | F1 by_rule | Δ F1 | 95% interval "
          "| better / worse / same | sign test p |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    if len(rows) > 1:
        print(line("pooled", pooled_base, pooled_rule, decided_all, means=not args.unchanged))
    return 0


if __name__ == "__main__":
    sys.exit(main())
