"""Does the detectable difference that ``chainrag compare`` prints hold? A simulation with the
project's own paired bootstrap (:func:`chainrag.report.stats.paired`).

    .venv/bin/python scripts/power_floor.py                 # under a minute of CPU
    .venv/bin/python scripts/power_floor.py --sims 200      # quicker, rougher

Three tables, the evidence for the rule docs/guide.md states ("Planning a comparison"):

1. **How answers change here**: every stored run of the three long dev sets against
   paper-faithful ChainRAG's CxtInt on the same questions (its primary answer against
   ``ansint``'s ``cxtint``), the questions whose F1 changed and by how much. Most changed
   questions move by 100 points (an answer that flips between wrong and right), so a
   difference of D points over n questions is about n·D/100 changed answers.
2. **The floor**: questions whose answer flips by +100 points, each with chance D/100 (the
   flips most in the comparison's favour: none the other way), at n = 30 and 90: the share of
   comparisons whose 95% interval leaves 0 out (power) at the flip floor
   (:func:`~chainrag.report.stats.flip_floor`), around it, and at 3.1 points, what the
   spread-based formula says a comparison with one changed answer detects. Then flips both
   ways (a gain with chance p, a loss with chance q, 20% of the questions changing, as the
   frozen recipe against ChainRAG's CxtInt changed 18 of 90): power at the larger of the floor
   and the spread-based figure from the model's own SD.
3. **The pre-registered rule** (interval above 0 AND point estimate >= +3) for a true +3, in
   that both-ways model: how often the interval leaves 0 out and how often the rule passes,
   at 36 questions (the final test), 90 (the dev sets) and the n the spread says +3 needs,
   beside the normal approximation of :func:`~chainrag.report.stats.rule_chance`.

Each cell is ``--sims`` simulated comparisons (default 1,000; seeded, so a rerun prints the
same tables), each interval from ``--resamples`` bootstrap resamples (default 2,000; the
results page uses 10,000, which moves these shares by less than their own noise, about ±1.3
points at 1,000 simulations). No LLM, no model: numbers only.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from chainrag.report.stats import (
    FLIP,
    detectable,
    flip_floor,
    least_changes,
    paired,
    questions_needed,
    rule_chance,
)

ROOT = Path(__file__).resolve().parent.parent
LONG = ("long-musique", "long-2wiki", "long-hotpotqa")
CHANGED = 0.20
"""The share of questions whose answer changes in the both-ways model: 18 of 90 for the frozen
recipe against ChainRAG's CxtInt on the dev sets."""
GOAL = 3.0

Draw = Callable[[np.random.Generator, int], np.ndarray]
"""One simulated comparison's per-question F1 differences (0..1 units) for n questions."""


def changes(root: Path) -> list[float]:
    """The F1 change (points) of every changed question, every stored run of the long sets
    against ``ansint``'s CxtInt."""
    from chainrag.run.reading import predictions

    out: list[float] = []
    for name in LONG:
        folder = root / "docs" / "runs" / name
        base = {r.id: r.answers["cxtint"].f1 for r in predictions(folder / "ansint")}
        for run in sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "ansint"):
            for r in predictions(run):
                if r.id in base and abs(r.f1 - base[r.id]) > 1e-9:
                    out.append(100 * (r.f1 - base[r.id]))
    return out


def flips(gain: float, loss: float) -> Draw:
    """Each question +1 with chance ``gain``, -1 with chance ``loss``, else 0."""

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        return np.where(u < gain, 1.0, np.where(u < gain + loss, -1.0, 0.0))

    return draw


def both_ways(delta: float) -> Draw:
    """:data:`CHANGED` of the questions flip, gains outnumbering losses by ``delta`` points."""
    return flips((CHANGED + delta / FLIP) / 2, (CHANGED - delta / FLIP) / 2)


def both_ways_sd(delta: float) -> float:
    """The SD (points) of :func:`both_ways`'s per-question differences."""
    return FLIP * math.sqrt(CHANGED - (delta / FLIP) ** 2)


def simulate(draw: Draw, n: int, sims: int, resamples: int, seed: int) -> tuple[float, float]:
    """The share of ``sims`` comparisons of ``n`` questions whose interval leaves 0 out on the
    positive side, and the share that also have a point estimate of at least :data:`GOAL`."""
    rng = np.random.default_rng(seed)
    above = passed = 0
    for _ in range(sims):
        diff = draw(rng, n)  # a loss: right before, wrong after; a gain the other way round
        p = paired((diff < 0).astype(float).tolist(), (diff > 0).astype(float).tolist(),
                   resamples=resamples)  # fmt: skip
        above += p.low > 0
        passed += p.low > 0 and p.delta >= GOAL
    return above / sims, passed / sims


def change_table(found: Sequence[float]) -> str:
    sizes = np.abs(np.asarray(found))
    rows = [("changed questions", f"{len(sizes):,}"),
            ("moved by 100 points (a flip)", f"{np.mean(sizes >= 100 - 1e-6):.0%}"),
            ("moved by 50 points or more", f"{np.mean(sizes >= 50 - 1e-6):.0%}"),
            ("median move", f"{np.median(sizes):.0f} points")]  # fmt: skip
    return "\n".join(["| the long sets' stored runs against ChainRAG's CxtInt | |", "|---|---|",
                      *(f"| {a} | {b} |" for a, b in rows)])  # fmt: skip


def floor_table(sims: int, resamples: int) -> str:
    lines = ["| n | model | true Δ | what it is | power (interval above 0) |",
             "|---|---|---|---|---|"]  # fmt: skip
    for n in (30, 90):
        floor = flip_floor(n)
        one_change = detectable(100 / math.sqrt(n), n)  # one answer of n flipped: SD 100/sqrt(n)
        for delta, what in ((one_change, "the spread formula, one answer changed"),
                            (floor / 2, "half the floor"), (floor, "the flip floor"),
                            (1.5 * floor, "1.5 × the floor")):  # fmt: skip
            power, _ = simulate(flips(delta / FLIP, 0.0), n, sims, resamples, seed=n)
            lines.append(f"| {n} | flips one way | {delta:.1f} | {what} | {power:.0%} |")
        # Both ways: the detectable difference the rule gives at the model's own SD, found by
        # fixed-point iteration (the SD depends on delta only slightly).
        delta = floor
        for _ in range(20):
            delta = max(floor, detectable(both_ways_sd(delta), n))
        power, _ = simulate(both_ways(delta), n, sims, resamples, seed=n + 1)
        what = "the larger of the floor and the spread formula"
        lines.append(f"| {n} | {CHANGED:.0%} change, both ways | {delta:.1f} | {what} "
                     f"| {power:.0%} |")  # fmt: skip
    return "\n".join(lines)


def rule_table(sims: int, resamples: int) -> str:
    sd = both_ways_sd(GOAL)
    needed = questions_needed(sd, GOAL)
    lines = [f"True Δ +{GOAL:g}, {CHANGED:.0%} of the questions changing both ways (SD {sd:.1f}):",
             "", "| n | interval above 0 | rule passes (and Δ ≥ +3) | rule, normal approximation |",
             "|---|---|---|---|"]  # fmt: skip
    for n in (36, 90, needed):
        above, passed = simulate(both_ways(GOAL), n, sims, resamples, seed=n + 2)
        normal = rule_chance(sd, n, GOAL, GOAL)
        lines.append(f"| {n:,} | {above:.0%} | {passed:.0%} | {normal:.0%} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000, help="Comparisons a cell.")
    parser.add_argument("--resamples", type=int, default=2000, help="Bootstrap resamples.")
    parser.add_argument("--root", type=Path, default=ROOT, help="The repository (docs/runs).")
    args = parser.parse_args(argv)
    print(change_table(changes(args.root)), end="\n\n")
    print(f"At least {least_changes(30)} questions must change the same way for the interval "
          "to leave 0 out (n = 30 and 90).\n")  # fmt: skip
    print(floor_table(args.sims, args.resamples), end="\n\n")
    print(rule_table(args.sims, args.resamples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
