"""Did two runs of one recipe answer alike? Every shared question's record compared, field by field.

    .venv/bin/python scripts/same_answers.py RUN_A RUN_B

The check of docs/results.md's "Reproducible local inference": the same recipe run twice from
empty caches (the second time after another recipe's requests on the same server) should give
the same records — answers, scores, retrieval, the whole trace (every sub-question, verdict,
sub-answer and the LLM's raw replies) and the tokens of every call — except for what measures
time (``latency_s``, ``seconds``). A field a record written before it existed holds as null
(a step's ``summary``, kept since 2026-11-25 12:37) is compared only where both records hold
it, and such records are counted apart. Prints the questions compared, how many records are
identical, and for each that is not, the first fields that differ. Exit 1 if any differs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chainrag.run.folder import RunDir
from chainrag.run.record import plain

TIMES = {"latency_s", "seconds", "wall_s"}
LATER = {"summary"}
"""Fields that records written before they existed hold as null (StepTrace.summary)."""


def untimed(value: Any) -> Any:
    """``value`` (a record as JSON) without the fields that measure time."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def differences(a: Any, b: Any, where: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, value in a, value in b) where two JSON values differ (a leaf, or a list's length)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in dict.fromkeys([*a, *b]):
            yield from differences(a.get(key), b.get(key), f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{where}[{i}]")
    elif a != b:
        yield where or ".", a, b


def not_kept(path: str, a: Any, b: Any) -> bool:
    """Whether a difference is a :data:`LATER` field that one of the records does not hold."""
    return path.rsplit(".", 1)[-1] in LATER and (a is None or b is None)


def shown(path: str, a: Any, b: Any) -> str:
    return f"{path}: {str(a)[:80]!r} vs {str(b)[:80]!r}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs=2, help="The two run folders.")
    args = parser.parse_args()
    records = []
    for folder in args.runs:
        found, _ = RunDir(folder).records(repair=False)
        records.append({r.id: untimed(plain(r)) for r in found})
    shared = [q for q in records[0] if q in records[1]]
    found = {q: list(differences(records[0][q], records[1][q])) for q in shared}
    older = [q for q, d in found.items() if d and all(not_kept(*x) for x in d)]
    unlike = {q: [shown(*x) for x in d if not not_kept(*x)] for q, d in found.items()}
    unlike = {q: d for q, d in unlike.items() if d}
    print(f"{len(shared)} questions in both runs ({len(records[0])} and {len(records[1])} "
          f"answered); records identical but for time: {len(shared) - len(unlike)}"
          + (f" ({len(older)} of them but for a step summary one record, written before "
             "summaries were kept, does not hold)" if older else ""))  # fmt: skip
    for question, diffs in unlike.items():
        print(f"  {question}: {len(diffs)} fields differ, first: " + "; ".join(diffs[:3]))
    return 1 if unlike else 0


if __name__ == "__main__":
    sys.exit(main())
