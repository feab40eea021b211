"""How much of a context ChainRAG's expansion reaches: the share of a sentence graph's words
within 1, 2 and 3 hops (all edge layers) of 3 random seed sentences, averaged over the sentence
graphs in the index cache that have at most --max-sentences sentences (the per-question dev
contexts; the bench's corpus graphs are larger).

    .venv/bin/python scripts/hop_coverage.py [--max-sentences 400] [--trials 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.core.paths import cache_root
from chainrag.index.graph import IndexFormatError, SentenceGraph


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--max-sentences", type=int, default=400)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    shares, sizes = [], []
    for folder in sorted((cache_root() / "indexes").glob("*")):
        meta_file = folder / "index.json"
        if not meta_file.is_file():
            continue
        if json.loads(meta_file.read_text(encoding="utf-8")).get("kind") != "sentence_graph":
            continue
        # the embedder is not used for walking the graph; a cheap one avoids loading MiniLM
        try:
            graph = SentenceGraph.load(folder, HashedBagOfWords(dim=8)).view(None)
        except IndexFormatError:  # written by an older chainrag: skipped
            continue
        words = np.array([len(t.split()) for t in graph.texts], dtype=np.float64)
        if not 3 < len(words) <= args.max_sentences:
            continue
        sizes.append((len(words), words.sum()))
        for _ in range(args.trials):
            reached = {int(u) for u in rng.choice(len(words), 3, replace=False)}
            row = []
            for _hop in range(3):
                reached |= set(graph.neighbours(sorted(reached)))
                row.append(words[sorted(reached)].sum() / words.sum())
            shares.append(row)
    if not sizes:
        print("no sentence graphs of that size in the index cache (run a ChainRAG recipe first)")
        return 1
    mean = np.mean(shares, axis=0)
    print(f"{len(sizes)} graphs; mean {np.mean([s for s, _ in sizes]):.0f} sentences, "
          f"{np.mean([w for _, w in sizes]):.0f} words")  # fmt: skip
    print("| hops from 3 random seeds | 1 | 2 | 3 |")
    print("|---|---|---|---|")
    print("| share of the context's words reached | " + " | ".join(f"{100 * m:.1f}%" for m in mean)
          + " |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
