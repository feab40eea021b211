"""Can the reranker student learn at all? Train it on a handful of MuSiQue train pairs (half
gold, half not) and score those same pairs: a student whose training pipeline works memorises
them (gold near 1, the rest near 0). A check of the pipeline, not of generalisation.

    .venv/bin/python scripts/distill_overfit.py [--pairs 64] [--epochs 20] [--max-length 128]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainrag.components.index.embedders import offline_minilm_path
from chainrag.data.datasets import load_dataset
from chainrag.training.distill_fit import DistillConfig, pairs_of, student_scores, train_student
from chainrag.training.teachers import gold_teacher


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=64, help="pairs, half of them gold")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--max-length", type=int, default=128)
    args = parser.parse_args()
    half = args.pairs // 2
    pairs = pairs_of(load_dataset("musique_train", 40))
    chosen = [p for p in pairs if p.gold][:half] + [p for p in pairs if not p.gold][:half]
    targets = gold_teacher(chosen)
    config = DistillConfig(epochs=args.epochs, lr=args.lr, max_length=args.max_length)
    started = time.perf_counter()
    model, tokenizer, history = train_student(offline_minilm_path(), chosen, targets, config)
    scores = student_scores(model, tokenizer, chosen, args.max_length)
    print(f"{len(chosen)} pairs, {args.epochs} epochs, lr {args.lr}: "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip
    print("loss per epoch: " + " ".join(f"{h:.3f}" for h in history))
    print(f"mean score of the gold pairs {scores[:half].mean():.3f}, "
          f"of the others {scores[half:].mean():.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
