"""Where ChainRAG's two integrations part ways, question by question, from a run's traces.

For each question of a ChainRAG run directory: is AnsInt right, is CxtInt right (F1 ≥ 0.5
counts as right), and does any sub-answer already hold a gold answer (after SQuAD
normalisation, the sub-answer contains it: "Richland County, SC" holds "Richland County", but
"South Carolina" does not hold "Richland County, South Carolina")? Then counts by case, so
that a gap between AnsInt and CxtInt can be put down to the sub-answers (none holds the
answer) or to AnsInt's final call (one does, and the final answer is still wrong).

    .venv/bin/python scripts/integration_gap.py docs/runs/musique/ansint [--right 0.5] [--list]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.metrics import normalize_answer, qa_scores
from chainrag.runs import PREDICTIONS, read_lines


def holds(text: str, answers: list[str]) -> bool:
    """``text`` contains some gold answer, both normalised."""
    said = f" {normalize_answer(text)} "
    return any((gold := normalize_answer(a)) and f" {gold} " in said for a in answers)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path, help="a ChainRAG run directory")
    parser.add_argument("--right", type=float, default=0.5, help="F1 at which an answer counts")
    parser.add_argument("--list", action="store_true", help="one line per question too")
    args = parser.parse_args()
    records, _ = read_lines(args.run / PREDICTIONS, repair=False)
    if not records:
        print(f"{args.run / PREDICTIONS}: no predictions", file=sys.stderr)
        return 1
    cases: Counter[tuple[str, str, str]] = Counter()
    steps = []
    for r in records:
        gold = list(r["gold"])
        texts = {a["name"]: a["answer"]["text"] for a in r["trace"]["answers"]}
        if not {"ansint", "cxtint"} <= texts.keys():
            print(
                f"{args.run}: question {r['id']} has no AnsInt and CxtInt answers", file=sys.stderr
            )
            return 1
        right = {k: qa_scores(texts[k], gold)[1] >= args.right for k in ("ansint", "cxtint")}
        subs = [s["answer"]["answer"] for s in r["trace"]["steps"] if s.get("answer")]
        in_subs = any(holds(s, gold) for s in subs)
        steps.append(len(r["trace"]["steps"]))
        key = (
            "right" if right["ansint"] else "wrong",
            "right" if right["cxtint"] else "wrong",
            "yes" if in_subs else "no",
        )
        cases[key] += 1
        if args.list:
            print(f"{r['id']}\tAnsInt {key[0]}\tCxtInt {key[1]}\tin sub-answers {key[2]}\t"
                  f"gold {gold[0]!r}\tsub-answers {subs}")  # fmt: skip
    n = len(records)
    print(f"{args.run}: {n} questions, {sum(steps) / n:.1f} steps each on average "
          f"(right = F1 ≥ {args.right})\n")  # fmt: skip
    print("| AnsInt | CxtInt | a sub-answer holds the gold answer | questions |")
    print("|---|---|---|---|")
    for key, count in sorted(cases.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {key[0]} | {key[1]} | {key[2]} | {count} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
