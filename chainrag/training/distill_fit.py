"""Patwa et al.'s distilled reranker: its (question, paragraph) pairs and the student's fit.

The student starts from the offline all-MiniLM-L6-v2 (its encoder; the one-output regression
head is new) and is trained with MSE between its sigmoid score and the teacher's score
(:mod:`~chainrag.training.teachers`) of each (question, paragraph) pair of the training
questions, all of a question's paragraphs (gold and distractors). The saved folder is a plain
Hugging Face sequence-classification model, usable as ``{kind: cross_encoder, model_path: DIR}``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from chainrag.core.device import Resolved
from chainrag.core.types import QAExample
from chainrag.training.common import passage_text


@attrs.frozen
class Pair:
    """One (question, paragraph) pair: the question's index among those kept, its text,
    the paragraph's text (``title: text``) and whether the paragraph is gold."""

    question: int
    query: str
    passage: str
    gold: bool


def pairs_of(examples: Sequence[QAExample]) -> list[Pair]:
    """Every (question, paragraph) pair of the questions that have gold paragraphs."""
    out = []
    kept = [e for e in examples if e.supporting_passages]
    for n, example in enumerate(kept):
        gold = set(example.supporting_passages)
        for i, p in enumerate(example.passages):
            out.append(Pair(n, example.question, passage_text(p.title, p.text), i in gold))
    return out


@attrs.frozen
class DistillConfig:
    """Training settings of the student (AdamW, MSE on the sigmoid of its one output)."""

    epochs: int = 2
    batch_size: int = 16
    lr: float = 3e-5
    max_length: int = 256
    validation: float = 0.3
    seed: int = 0
    balance: bool = False
    """Each epoch: every pair the teacher scores ≥ 0.5 and as many others, drawn anew."""


def epoch_size(targets: np.ndarray, balance: bool) -> int:
    """Pairs per epoch: all, or (``balance``) twice the smaller of the ≥ 0.5 and < 0.5 sides."""
    if not balance:
        return len(targets)
    high = int(np.count_nonzero(np.asarray(targets) >= 0.5))
    return 2 * min(high, len(targets) - high)


def epoch_order(targets: np.ndarray, balance: bool, rng: random.Random) -> list[int]:
    """The pairs of one epoch, shuffled: all of them, or (``balance``) every pair scored ≥ 0.5
    and an equal number of the rest, drawn without replacement (all of the smaller side)."""
    if not balance:
        order = list(range(len(targets)))
    else:
        high = [i for i, t in enumerate(targets) if t >= 0.5]
        low = [i for i, t in enumerate(targets) if t < 0.5]
        n = min(len(high), len(low))
        order = (high if len(high) <= len(low) else rng.sample(high, n)) + (
            low if len(low) <= len(high) else rng.sample(low, n)
        )
    rng.shuffle(order)
    return order


def train_student(
    base_path: str,
    pairs: Sequence[Pair],
    targets: np.ndarray,
    config: DistillConfig,
    progress: Callable[[int, float], None] | None = None,
    device: Resolved = "cpu",
) -> tuple[Any, Any, list[float]]:
    """(model, tokenizer, mean loss per epoch) of a one-output cross-encoder trained with MSE
    between sigmoid(logit) and the teacher's 0..1 scores, on ``device``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    model = AutoModelForSequenceClassification.from_pretrained(base_path, num_labels=1)
    model.to(device)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr)
    rng = random.Random(config.seed)  # noqa: S311 (reproducible shuffling)
    history, step = [], 0
    model.train()
    for _ in range(config.epochs):
        order = epoch_order(np.asarray(targets), config.balance, rng)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            encoded = tokenizer([pairs[i].query for i in batch], [pairs[i].passage for i in batch],
                                padding=True, truncation=True, max_length=config.max_length,
                                return_tensors="pt").to(device)  # fmt: skip
            logits = model(**encoded).logits.squeeze(-1)
            target = torch.from_numpy(np.asarray(targets[batch], dtype=np.float32)).to(device)
            loss = torch.nn.functional.mse_loss(torch.sigmoid(logits), target)
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            total += float(loss.detach()) * len(batch)
            step += 1
            if progress:
                progress(step, float(loss.detach()))
        history.append(total / max(len(order), 1))
    model.eval()
    return model, tokenizer, history


def student_scores(
    model: Any, tokenizer: Any, pairs: Sequence[Pair], max_length: int, device: Resolved = "cpu"
) -> np.ndarray:
    """The student's sigmoid score of every pair (the model on ``device``)."""
    import torch

    with torch.no_grad():
        encoded = tokenizer(
            [p.query for p in pairs], [p.passage for p in pairs], padding=True, truncation=True,
            max_length=max_length, return_tensors="pt",
        ).to(device)  # fmt: skip
        return np.asarray(torch.sigmoid(model(**encoded).logits.squeeze(-1)).cpu().numpy())
