"""The embedder's CPU cost a text by batch size and torch threads, on a question's sentences:
where ``flag_model``'s :data:`~chainrag.components.index.embedders.CPU_BATCH` and
:data:`~chainrag.components.index.embedders.ALL_CORES_FROM` come from.

    .venv/bin/python bench/embed_batches.py [--dataset 'musique[60:80]'] [--questions 5]
        [--batches 8 16 32 64] [--threads 1 2] [--repeats 3]

The texts: the sentences (spaCy's ``senter``, as the sentence graph splits them) of the first
``--questions`` questions' own paragraphs. Every (threads, batch) cell embeds all of them with
all-MiniLM-L6-v2 through chainrag's own forward pass (``in_batches``: sorted by length, padded
a batch, mean pooling), the cells alternating within each round so that drift hits each alike.
Printed: CPU seconds (user + sys of this process), wall seconds, sentences a CPU second and
the largest difference of a coordinate from the first cell's vectors, each the median of
``--repeats`` rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.index.embedders import FlagModelEmbedder, in_batches
from chainrag.components.index.spacy_nlp import SpacySentences
from chainrag.context import StageContext
from chainrag.data.datasets import load_dataset


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="musique[60:80]", help="default: %(default)s")
    parser.add_argument("--questions", type=int, default=5, help="default: %(default)s")
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64],
                        help="texts a forward pass (default: %(default)s)")  # fmt: skip
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="torch intra-op threads (default: %(default)s)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="default: %(default)s")
    args = parser.parse_args()
    import torch

    ctx = StageContext()
    passages = [p for q in load_dataset(args.dataset)[: args.questions] for p in q.passages]
    texts = [s.text for s in SpacySentences()(passages, ctx)]
    model = FlagModelEmbedder(device="cpu")._model(ctx)
    in_batches(model, texts[:64], "passage", 256, 32)  # load and warm
    cells = [(t, b) for t in args.threads for b in args.batches]
    cpu: dict[tuple[int, int], list[float]] = {c: [] for c in cells}
    wall: dict[tuple[int, int], list[float]] = {c: [] for c in cells}
    vectors: dict[tuple[int, int], np.ndarray] = {}
    for _ in range(args.repeats):
        for threads, batch in cells:
            torch.set_num_threads(threads)
            c0, w0 = cpu_seconds(), time.perf_counter()
            vectors[threads, batch] = in_batches(model, texts, "passage", 256, batch)
            cpu[threads, batch].append(cpu_seconds() - c0)
            wall[threads, batch].append(time.perf_counter() - w0)
    first = vectors[cells[0]]
    print(f"{len(texts):,} sentences of {args.dataset}'s first {args.questions} questions, "
          f"all-MiniLM-L6-v2, median of {args.repeats}; load average "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    print("| threads | batch | CPU s | wall s | sentences / CPU s | CPU rounds | max diff |")
    print("|---|---|---|---|---|---|---|")
    for cell in cells:
        c, w = statistics.median(cpu[cell]), statistics.median(wall[cell])
        rounds = ", ".join(f"{x:.2f}" for x in cpu[cell])
        diff = float(np.abs(vectors[cell] - first).max())
        print(f"| {cell[0]} | {cell[1]} | {c:.2f} | {w:.2f} | {len(texts) / c:.0f} | "
              f"{rounds} | {diff:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main()
