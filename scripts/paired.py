"""Is a difference between two runs more than noise? A paired comparison on shared questions.

Each RUN is compared with BASE on the questions both answered, for every answer variant both
hold (ChainRAG's ``ansint`` and ``cxtint``; a run with other variants is compared on its primary
answer): mean F1 of each, the mean difference, its 95% paired-bootstrap interval (questions
resampled with replacement), how many questions got better, worse or stayed the same, and the
two-sided exact sign test over the questions that changed. With 30 questions one question is
3.3 points of EM: an interval that spans 0 says the runs are not told apart.

    .venv/bin/python scripts/paired.py docs/runs/musique/ansint docs/runs/musique/no_graph \\
        docs/runs/musique/no_rewrite [--resamples 10000] [--seed 0]
    .venv/bin/python scripts/paired.py --over docs/runs/musique docs/runs/2wiki \\
        docs/runs/hotpotqa -- ansint naive iter_retgen     # the three datasets' questions pooled
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.errors import ChainragError
from chainrag.report import load_run
from chainrag.runs import PREDICTIONS

SAME = 1e-9  # F1 differences below this count as "same"


@dataclass(frozen=True)
class Paired:
    """One variant of one run against the base, on ``n`` shared questions (F1 in %)."""

    n: int
    base: float
    other: float
    low: float  # 95% paired-bootstrap interval of other - base
    high: float
    better: int
    worse: int
    same: int
    p_sign: float

    @property
    def delta(self) -> float:
        return self.other - self.base


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven if a changed
    question were as likely to go either way."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired(
    base: Sequence[float], other: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> Paired:
    """Compare per-question scores (0..1) of the same questions, in the same order."""
    if len(base) != len(other):
        raise ValueError(f"{len(base)} base scores against {len(other)}: not paired")
    if not base:
        raise ValueError("no shared questions to compare")
    a, b = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    diff = b - a
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    better, worse = int((diff > SAME).sum()), int((diff < -SAME).sum())
    return Paired(len(diff), 100 * a.mean(), 100 * b.mean(), 100 * low, 100 * high,
                  better, worse, len(diff) - better - worse, sign_test(better, worse))  # fmt: skip


def scores(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Variant -> question id -> F1; the primary answer is variant ``primary``."""
    out: dict[str, dict[str, float]] = {"primary": {}}
    for r in records:
        out["primary"][str(r["id"])] = float(r["f1"])
        for variant, scored in r.get("answers", {}).items():
            out.setdefault(variant, {})[str(r["id"])] = float(scored["f1"])
    return out


def compare(
    base: Sequence[Mapping[str, Any]],
    other: Sequence[Mapping[str, Any]],
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, Paired]:
    """Answer label -> the paired comparison, on the questions both runs answered: each
    variant both runs hold; when they share none, each of the base's variants against the
    other run's primary answer (``cxtint vs primary``)."""
    a, b = scores(base), scores(other)
    pairs = [(v, v) for v in a if v in b and v != "primary"]
    if not pairs:
        pairs = [(v, "primary") for v in a if v != "primary"] or [("primary", "primary")]
    out = {}
    for x, y in pairs:
        shared = [q for q in a[x] if q in b[y]]
        if shared:
            label = x if x == y else f"{x} vs {y}"
            out[label] = paired([a[x][q] for q in shared], [b[y][q] for q in shared],
                                resamples=resamples, seed=seed)  # fmt: skip
    return out


def load(folder: Path) -> tuple[str, list[Mapping[str, Any]]]:
    """A run's name and records; ChainragError (or ValueError) naming the folder if it is not
    a run directory."""
    if not (folder / PREDICTIONS).is_file():
        raise ValueError(f"{folder}: no {PREDICTIONS} (not a run directory?)")
    run = load_run(folder)
    return run.name, list(run.records)


def pooled(folders: Sequence[Path], name: str) -> tuple[str, list[Mapping[str, Any]]]:
    """Run ``name`` of every dataset folder as one run, its question ids prefixed by the
    folder's name (so that questions of different datasets never pair)."""
    records: list[Mapping[str, Any]] = []
    for folder in folders:
        _, found = load(folder / name)
        records += [{**r, "id": f"{folder.name}/{r['id']}"} for r in found]
    return name, records


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base", help="the run the others are compared with (a directory)")
    parser.add_argument("runs", nargs="+", help="run directories")
    parser.add_argument(
        "--over",
        type=Path,
        nargs="+",
        metavar="DATASET_DIR",
        help="pool these datasets' folders (e.g. docs/runs/musique docs/runs/2wiki): BASE and "
        "RUNS are then run names inside each of them, and the questions of all are compared "
        "together",
    )
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    args = parser.parse_args()
    try:
        runs = [pooled(args.over, n) if args.over else load(Path(n))
                for n in (args.base, *args.runs)]  # fmt: skip
    except (ChainragError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    (_, base), where = (
        runs[0],
        f" pooled over {', '.join(map(str, args.over))}" if args.over else "",
    )
    print(f"F1 in %, against {args.base}{where} on the questions both answered; 95% interval of "
          f"the difference from {args.resamples:,} paired bootstrap resamples (seed {args.seed}); "
          "p = two-sided exact sign test over the questions that changed.\n")  # fmt: skip
    print("| run | answer | n | F1 base | F1 run | Δ F1 | 95% interval | run better / worse / same "
          "| sign test p |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for given, (name, records) in zip(args.runs, runs[1:], strict=True):
        found = compare(base, records, resamples=args.resamples, seed=args.seed)
        if not found:
            print(f"{given}: no question in common with {args.base}", file=sys.stderr)
            return 1
        for variant, p in found.items():
            print(f"| {name} | {variant} | {p.n} | {p.base:.2f} | {p.other:.2f} | "
                  f"{p.delta:+.2f} | [{p.low:+.1f}, {p.high:+.1f}] | "
                  f"{p.better} / {p.worse} / {p.same} | {p.p_sign:.3f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
