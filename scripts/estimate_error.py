"""How far ``chainrag run --estimate`` from 5 questions is from the tokens of the 30 answered.

    .venv/bin/python scripts/estimate_error.py [docs/runs] [--sample 5] [--all]

For each stored run of 30 questions (default: NaiveRAG, NaiveRAG w/ QD, Iter-RetGen and
ChainRAG on the six shipped settings; ``--all``: every run folder under the root), the
estimate draws the questions ``--estimate --sample 5`` would answer for a run of those 30
(:func:`chainrag.run.estimate.sample_questions`, in dataset order) and scales them up as it
does (:func:`chainrag.run.extrapolation.extrapolate`); the table sets that against what the 30
took: prompt and completion tokens a question and dollars at gpt-4o-mini's price, the error of
the estimate in percent, and whether the 30's figure lies in the estimate's 95% interval.
Both sides are the local model's tokens as the runs counted them, so a conversion to another
tokenizer (a factor on both) changes no error. Only questions answered by real calls count
(a question answered from the response cache has no tokens); a run with fewer than 30 such
questions is left out and counted.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

import attrs

from chainrag.data.datasets import load_dataset
from chainrag.llm.backend import token_price
from chainrag.recipes.recipe import LLMSpec
from chainrag.run.estimate import Basis, Spread, extrapolate, sample_questions
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.record import RunRecord

SETS = ("musique", "2wiki", "hotpotqa", "long-musique", "long-2wiki", "long-hotpotqa")
METHODS = ("naive", "naive_qd", "iter_retgen", "ansint")
MODEL = LLMSpec(kind="litellm", model="openai/gpt-4o-mini")
RUN_SIZE = 30


@attrs.frozen
class Row:
    """One run: the estimate from the sample and the figures of the whole run, a question."""

    run: str
    prompt: Spread
    completion: Spread
    dollars: Spread
    prompt_30: float
    completion_30: float
    dollars_30: float


def measured(folder: Path) -> list[RunRecord] | None:
    """The run's questions answered by real calls, in dataset order, if there are 30."""
    run = RunDir(folder)
    meta = run.meta()
    if meta.experiment is not None:
        return None
    by_id = {r.id: r for r in run.records()[0] if r.usage.cache_hits == 0}
    if len(by_id) < RUN_SIZE:
        return None
    order = [e.qid for e in load_dataset(meta.dataset) if e.qid in by_id]
    return [by_id[qid] for qid in order[:RUN_SIZE]]


def row(label: str, records: Sequence[RunRecord], sample: int) -> Row:
    """The estimate of ``records``' run from ``sample`` of them, beside the run's own figures."""
    chosen = sample_questions(records, sample)
    price = token_price(MODEL.model)
    assert price is not None
    basis = Basis("run", Path(label), len(chosen))
    found = extrapolate(chosen, len(records), width=1, slots=1, price=price, run=label,
                        spec=MODEL, basis=basis)  # fmt: skip
    assert found.dollars is not None
    per = len(records)
    spent = [price.dollars(r.usage.prompt_tokens, r.usage.completion_tokens) for r in records]
    return Row(label, found.prompt_each, found.completion_each, found.dollars.times(1 / per),
               statistics.fmean(r.usage.prompt_tokens for r in records),
               statistics.fmean(r.usage.completion_tokens for r in records),
               statistics.fmean(spent))  # fmt: skip


def error(estimate: Spread, actual: float) -> str:
    """The estimate's error in percent, ``*`` where the actual figure is outside its interval."""
    outside = "" if estimate.low <= actual <= estimate.high else " *"
    return f"{100 * (estimate.mean - actual) / actual:+.1f}%{outside}"


def table(rows: Sequence[Row], sample: int) -> list[str]:
    lines = [
        f"| run | prompt tokens a question: {sample} (95%) | 30 | error | completion: {sample} "
        f"| 30 | error | $ a question at gpt-4o-mini: {sample} | 30 | error |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.run} | {r.prompt.mean:,.0f} ({r.prompt.low:,.0f}–{r.prompt.high:,.0f}) | "
            f"{r.prompt_30:,.0f} | {error(r.prompt, r.prompt_30)} | {r.completion.mean:,.1f} | "
            f"{r.completion_30:,.1f} | {error(r.completion, r.completion_30)} | "
            f"{r.dollars.mean * 1e3:.3f}m | {r.dollars_30 * 1e3:.3f}m | "
            f"{error(r.dollars, r.dollars_30)} |"
        )
    return lines


def summary(rows: Sequence[Row], left_out: int) -> list[str]:
    errors = sorted(abs(r.dollars.mean - r.dollars_30) / r.dollars_30 for r in rows)
    inside = sum(r.dollars.low <= r.dollars_30 <= r.dollars.high for r in rows)
    return [
        "",
        f"{len(rows)} runs ({left_out} left out: fewer than {RUN_SIZE} questions answered by "
        f"real calls). $ error: median {100 * statistics.median(errors):.1f}%, largest "
        f"{100 * errors[-1]:.1f}%; the 30's dollars inside the estimate's 95% interval in "
        f"{inside} of {len(rows)}. * = outside the interval; m = thousandths of a dollar.",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("docs/runs"))
    parser.add_argument("--sample", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="every run folder under the root")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root}: no such folder of runs")
    if args.all:
        folders = sorted(p.parent for p in args.root.glob(f"*/*/{RUN_FILE}"))
    else:
        folders = [args.root / s / m for s in SETS for m in METHODS]
    rows, left_out = [], 0
    for folder in folders:
        records = measured(folder) if (folder / RUN_FILE).is_file() else None
        if records is None:
            left_out += 1
            continue
        rows.append(row(f"{folder.parent.name}/{folder.name}", records, args.sample))
    if not rows:
        parser.error(f"{args.root}: no run of {RUN_SIZE} questions answered by real calls")
    print("\n".join(table(rows, args.sample) + summary(rows, left_out)))


if __name__ == "__main__":
    main()
