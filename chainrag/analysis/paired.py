"""Is a difference between two runs more than noise? A paired comparison on shared questions.

Each run is compared with a base run on the questions both answered, for every answer variant
both hold (ChainRAG's ``ansint`` and ``cxtint``; a run with other variants is compared on its
primary answer): mean F1 of each, the mean difference, its 95% paired-bootstrap interval
(questions resampled with replacement), how many questions got better, worse or stayed the
same, and the two-sided exact sign test over the questions that changed; under each difference,
the smallest true difference the comparison could detect (80% power, two-sided 5%: the larger
of the figure from the spread of its paired differences at its n and the flip floor of
:func:`~chainrag.report.stats.flip_floor`) and, with ``detect``, the questions needed to detect
that many points. With 30 questions one question is 3.3 points of EM: an interval that spans 0
says the runs are not told apart, and a detectable difference above the one hoped for says the
comparison could not have told. The statistics are :mod:`chainrag.report.stats`'s, the same the
report's ``--baseline`` uses.

    chainrag compare docs/runs/musique/ansint docs/runs/musique/no_graph
    chainrag compare ansint naive --over docs/runs/musique --over docs/runs/2wiki  # pooled
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from chainrag.report.stats import RESAMPLES, SEED, Paired, paired, sign_test
from chainrag.report.tables import check_detect, power_cells, power_heads, power_legend
from chainrag.run.files import RunError
from chainrag.run.reading import load_run, predictions_file
from chainrag.run.record import RunRecord

__all__ = ["Comparison", "Paired", "compare", "compare_runs", "load", "paired", "pooled",
           "scores", "sign_test"]  # fmt: skip

Records = Sequence[RunRecord]


def scores(records: Records) -> dict[str, dict[str, float]]:
    """Variant -> question id -> F1; the primary answer is variant ``primary``."""
    out: dict[str, dict[str, float]] = {"primary": {}}
    for r in records:
        out["primary"][r.id] = r.f1
        for variant, scored in r.answers.items():
            out.setdefault(variant, {})[r.id] = scored.f1
    return out


def compare(
    base: Records,
    other: Records,
    *,
    base_answer: str | None = None,
    answer: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Paired]:
    """Answer label -> the paired comparison, on the questions both runs answered: each
    variant both runs hold; when they share none, each of the base's variants against the
    other run's primary answer (``cxtint vs primary``). ``base_answer`` and/or ``answer``
    name the one pair to compare instead (the other side's primary when only one is named);
    a RunError names a variant a run does not hold."""
    a, b = scores(base), scores(other)
    pairs = [(v, v) for v in a if v in b and v != "primary"]
    if base_answer is not None or answer is not None:
        pairs = [(base_answer or "primary", answer or "primary")]
        for side, held, v in (("the base", a, pairs[0][0]), ("the run", b, pairs[0][1])):
            if v not in held:
                known = ", ".join(k for k in held if k != "primary")
                raise RunError(f"{side} has no answer {v!r} (it has: {known})")
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


def load(folder: Path, first: int | None = None) -> tuple[str, list[RunRecord]]:
    """A run's name and records (its ``first`` records only, in the order it answered them,
    when given: the run as it stood then); a RunError naming the folder if it is not a run
    directory."""
    predictions_file(folder)
    run = load_run(folder)
    return run.name, list(run.records[:first])


def pooled(
    folders: Sequence[Path], name: str, first: int | None = None
) -> tuple[str, list[RunRecord]]:
    """Run ``name`` of every dataset folder as one run (its ``first`` records of each, when
    given), its question ids prefixed by the folder's name (so that questions of different
    datasets never pair)."""
    records: list[RunRecord] = []
    for folder in folders:
        _, found = load(folder / name, first)
        records += [attrs.evolve(r, id=f"{folder.name}/{r.id}") for r in found]
    return name, records


BEST = "best"
"""``base_answer`` for the base's better answer variant on each dataset."""


def best_of(records: Records) -> tuple[str, list[RunRecord]]:
    """The answer variant with the highest mean F1 over ``records`` (the first of a tie), and
    the records with that answer alone, named :data:`BEST`."""
    means = {v: sum(f1.values()) / len(f1) for v, f1 in scores(records).items() if v != "primary"}
    chosen = max(means, key=lambda v: means[v])
    return chosen, [attrs.evolve(r, answers={BEST: r.answers[chosen]}) for r in records]


@attrs.frozen
class Comparison:
    """Runs against a base: one row (run name, answer label, comparison) per answer.
    ``chosen``: with ``base_answer`` ``best``, the base variant taken on each dataset."""

    base: str
    over: tuple[Path, ...]
    resamples: int
    seed: int
    rows: tuple[tuple[str, str, Paired], ...]
    chosen: tuple[tuple[str, str], ...] = ()
    first: int | None = None
    detect: float | None = None

    def markdown(self) -> str:
        """What the method was, then one table row per run and answer."""
        where = f" pooled over {', '.join(map(str, self.over))}" if self.over else ""
        among = f" among each run's first {self.first}" if self.first is not None else ""
        lines = [
            f"F1 in %, against {self.base}{where} on the questions both answered{among}; 95% "
            "interval "
            f"of the difference from {self.resamples:,} paired bootstrap resamples (seed "
            f"{self.seed}); p = two-sided exact sign test over the questions that changed."
            + (
                "\nbest = the base's answer with the higher mean F1 on each dataset, chosen "
                "after the fact: " + ", ".join(f"{v} on {where}" for where, v in self.chosen)
                if self.chosen
                else ""
            )
            + f"\n{power_legend(self.detect)}\n"
        ]
        heads = ["run", "answer", "n", "F1 base", "F1 run", "Δ F1", "95% interval",
                 *power_heads(self.detect), "run better / worse / same", "sign test p"]  # fmt: skip
        lines += ["| " + " | ".join(heads) + " |", "|---" * len(heads) + "|"]
        lines += ["| " + " | ".join([name, label, str(p.n), f"{p.base:.2f}", f"{p.other:.2f}",
                                     f"{p.delta:+.2f}", f"[{p.low:+.1f}, {p.high:+.1f}]",
                                     *power_cells(p, self.detect),
                                     f"{p.better} / {p.worse} / {p.same}", f"{p.p_sign:.3f}"])
                  + " |" for name, label, p in self.rows]  # fmt: skip
        return "\n".join(lines)


def compare_runs(
    base: str,
    runs: Sequence[str],
    *,
    over: Sequence[Path] = (),
    base_answer: str | None = None,
    answer: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    first: int | None = None,
    detect: float | None = None,
) -> Comparison:
    """Each of ``runs`` against ``base`` (run folders; with ``over``, run names inside each of
    those dataset folders, their questions pooled). ``base_answer`` and ``answer`` choose the
    answers compared (:func:`compare`); ``base_answer="best"`` takes, on each dataset, the
    base's variant with the higher mean F1 over its questions. ``first``: each run's first
    questions only (of each dataset folder), as a run stopped there would have them.
    ``detect``: a difference in points whose needed questions each row also states. A
    RunError names a folder that is not a run, a run with no question in common with the
    base, or a variant it lacks, or a ``detect`` not above 0."""
    if first is not None and first < 1:
        raise RunError(f"first must be 1 or more, got {first}")
    check_detect(detect)
    loaded = [pooled(over, n, first) if over else load(Path(n), first) for n in (base, *runs)]
    chosen: list[tuple[str, str]] = []
    if base_answer == BEST:
        best: list[RunRecord] = []
        for where, group in _by_dataset(loaded[0][1], over, base):
            variant, records = best_of(group)
            chosen.append((where, variant))
            best += records
        loaded[0] = (loaded[0][0], best)
    rows: list[tuple[str, str, Paired]] = []
    for given, (name, records) in zip(runs, loaded[1:], strict=True):
        try:
            found = compare(loaded[0][1], records, base_answer=base_answer, answer=answer,
                            resamples=resamples, seed=seed)  # fmt: skip
        except RunError as exc:
            raise RunError(f"{given} against {base}: {exc}") from None
        if not found:
            raise RunError(f"{given}: no question in common with {base}")
        rows += [(name, label, p) for label, p in found.items()]
    return Comparison(base, tuple(over), resamples, seed, tuple(rows), tuple(chosen), first,
                      detect)  # fmt: skip


def _by_dataset(
    records: Records, over: Sequence[Path], base: str
) -> list[tuple[str, list[RunRecord]]]:
    """The base's records by dataset folder (pooled ids start with the folder's name)."""
    if not over:
        return [(base, list(records))]
    return [(folder.name, [r for r in records if r.id.startswith(f"{folder.name}/")])
            for folder in over]  # fmt: skip
