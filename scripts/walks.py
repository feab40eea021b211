"""What ChainRAG's graph walks did in a run, from its traces: sub-questions per question, how
many were rewritten (the trigger fired) and in how many the rewriter changed the text, the
sufficiency judge's verdicts, hops per walk and words per walk.

For each ChainRAG run directory given (a run of recipes/chainrag/*.yaml or an ablation):

    .venv/bin/python scripts/walks.py docs/runs/musique/ansint docs/runs/2wiki/ansint

A walk is one sub-question's expansion (seeds, then hops until the judge says "yes", the word
budget is spent or nothing new is reachable). A verdict is one sufficiency check; "unread"
counts replies that were neither yes nor no (read as "no": the walk goes on), within "no".
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.judges import parse_yes_no
from chainrag.runs import PREDICTIONS, read_lines


def changed(step: dict[str, Any]) -> bool:
    """The step was rewritten and the rewriter changed its text (a small model often returns
    the sub-question as it was)."""
    rewritten = step.get("rewritten")
    return bool(rewritten) and str(rewritten).strip() != str(step.get("question", "")).strip()


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the records' trace steps (see the module docstring)."""
    steps = [s for r in records for s in r.get("trace", {}).get("steps", [])]
    walks = [s["expansion"] for s in steps if s.get("expansion")]
    verdicts = [v for w in walks for v in w.get("verdicts", [])]
    yes = sum(1 for v in verdicts if v.get("ok") is True)
    unread = sum(1 for v in verdicts if parse_yes_no(str(v.get("raw", ""))) is None)
    return {
        "questions": len(records),
        "sub_questions": len(steps),
        "rewritten": sum(1 for s in steps if s.get("rewritten")),
        "changed": sum(1 for s in steps if changed(s)),
        "checks": len(verdicts),
        "yes": yes,
        "no": len(verdicts) - yes,
        "unread": unread,
        "walks": len(walks),
        "hops": dict(sorted(Counter(int(w.get("hops", 0)) for w in walks).items())),
        "words": sum(int(w.get("words", 0)) for w in walks) / len(walks) if walks else 0.0,
        "unanswered": sum(1 for s in steps if s.get("answer") and not s["answer"]["answered"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+", help="ChainRAG run directories")
    args = parser.parse_args()
    rows = []
    for run in args.runs:
        path = run / PREDICTIONS
        if not path.is_file():
            print(f"{path}: no such file (not a run directory?)", file=sys.stderr)
            return 1
        records, _ = read_lines(path, repair=False)
        if not records:
            print(f"{path}: no predictions yet", file=sys.stderr)
            return 1
        rows.append((run, summary(records)))
    print("| run | questions | sub-q/q | rewritten (text changed) | checks | yes | no (unread) "
          "| walks by hops | words/walk | sub-q not answered |")  # fmt: skip
    print("|---" * 10 + "|")
    for run, s in rows:
        hops = ", ".join(f"{h}: {n}" for h, n in s["hops"].items()) or "–"
        print(f"| {run} | {s['questions']} | {s['sub_questions'] / s['questions']:.1f} "
              f"| {s['rewritten']} ({s['changed']}) | {s['checks']} | {s['yes']} "
              f"| {s['no']} ({s['unread']}) "
              f"| {hops} | {s['words']:.0f} | {s['unanswered']} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
