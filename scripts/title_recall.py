"""Paragraph-level recall by title of per-question runs, to set beside shared-corpus runs.

    .venv/bin/python scripts/title_recall.py docs/runs/2wiki/naive docs/runs/2wiki/ansint

A run over a shared corpus index scores retrieval against the gold passages mapped by title
(paragraph level, as HippoRAG reports it); a per-question run scores it at the dataset's own
level (2Wiki and HotpotQA: supporting sentences). This rebuilds each question's index from the
run's own recipe.yaml (embeddings are cached), maps the units the run retrieved to their
titles, and prints Recall@2/5/10 and R@all at paragraph level, so the two settings compare
like with like.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chainrag.core.context import ModelStore
from chainrag.data.datasets import load_dataset
from chainrag.data.metrics import title_retrieval_scores
from chainrag.index.build import IndexCache
from chainrag.index.graph import units_of
from chainrag.recipes.recipe import parse_yaml, structure
from chainrag.run.folder import RunDir
from chainrag.run.question import retrieved_units, searchable_index


def title_recall(folder: Path) -> dict[str, float]:
    """Mean paragraph-level recall by title of the run in ``folder``."""
    run = RunDir(folder)
    text = (folder / "recipe.yaml").read_text()
    recipe = structure(parse_yaml(text, str(folder)), str(folder))
    records, _ = run.records()
    examples = {e.qid: e for e in load_dataset(run.meta().dataset)}
    models, cache = ModelStore(), IndexCache()
    totals: dict[str, float] = {}
    for record in records:
        example = examples[record.id]
        units = units_of(searchable_index(recipe, example, models, cache))
        ranked = [units[u] for u in retrieved_units(record.trace)]
        scores = title_retrieval_scores(example, ranked, (2, 5, 10)).flat()
        for key in ("recall@2", "recall@5", "recall@10", "recall@all"):
            totals[key] = totals.get(key, 0.0) + scores[key]
    return {k: 100 * v / len(records) for k, v in totals.items()} | {"n": len(records)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="per-question run folders")
    args = parser.parse_args()
    print("| run | n | R@2 | R@5 | R@10 | R@all |\n|---|---|---|---|---|---|")
    for folder in args.runs:
        r = title_recall(folder)
        print(f"| {folder} | {r['n']:.0f} | {r['recall@2']:.1f} | {r['recall@5']:.1f} | "
              f"{r['recall@10']:.1f} | {r['recall@all']:.1f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
