"""Did two runs of one recipe answer alike? Every shared question's record compared, field by field.

    .venv/bin/python scripts/same_answers.py RUN_A RUN_B

The check of docs/results.md's "Reproducible local inference": the same recipe run twice from
empty caches (the second time after another recipe's requests on the same server) should give
the same records — answers, scores, retrieval, the whole trace (every sub-question, verdict,
sub-answer and the LLM's raw replies) and the tokens of every call — except for what measures
time (``latency_s``, ``seconds``). Prints the questions compared, how many records are
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


def untimed(value: Any) -> Any:
    """``value`` (a record as JSON) without the fields that measure time."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def differences(a: Any, b: Any, where: str = "") -> Iterator[str]:
    """The paths at which two JSON values differ (a leaf's path, or a list's length)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in dict.fromkeys([*a, *b]):
            yield from differences(a.get(key), b.get(key), f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{where}[{i}]")
    elif a != b:
        yield f"{where or '.'}: {str(a)[:80]!r} vs {str(b)[:80]!r}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs=2, help="The two run folders.")
    args = parser.parse_args()
    records = []
    for folder in args.runs:
        found, _ = RunDir(folder).records(repair=False)
        records.append({r.id: untimed(plain(r)) for r in found})
    shared = [q for q in records[0] if q in records[1]]
    unlike = {q: list(differences(records[0][q], records[1][q])) for q in shared}
    unlike = {q: d for q, d in unlike.items() if d}
    print(f"{len(shared)} questions in both runs ({len(records[0])} and {len(records[1])} "
          f"answered); records identical but for time: {len(shared) - len(unlike)}")  # fmt: skip
    for question, found in unlike.items():
        print(f"  {question}: {len(found)} fields differ, first: " + "; ".join(found[:3]))
    return 1 if unlike else 0


if __name__ == "__main__":
    sys.exit(main())
