"""Patwa et al.'s linear embedding adapter: its training pairs and its fit.

The adapter (:class:`~chainrag.components.index.linear_adapter.LinearAdapter`) is two D×D linear
maps
with biases, one for queries and one for passages, initialised to the identity plus small
noise; outputs are L2-normalised. Training (docs/decisions.md §2; the paper's loss as printed is
garbled, the authors' code fills in the rest): for each (query, gold passage, negative passage)
triplet, a hinge ``max(0, margin − cos(q, pos) + cos(q, neg))``; plus
``penalty · (‖C − C₀‖² + query_weight · ‖Q − Q₀‖²)``, the squared change from the base
embeddings (the seed found this essential against over-fitting; its code weights the queries'
change 8×). Adam, lr 5e-4 decayed ×0.95 per epoch. Negatives are the question's distractor
paragraphs and a gold paragraph of another question. Questions are split into train and
validation sets (:func:`~chainrag.training.common.split_questions`), never their pairs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from chainrag.components.index.linear_adapter import LinearAdapter
from chainrag.core.device import Resolved
from chainrag.core.types import FloatArray, QAExample
from chainrag.training.common import passage_text

if TYPE_CHECKING:
    import torch


@attrs.frozen
class PairSet:
    """Questions and passages as rows of embedding matrices, with training triplets.

    ``positives[i]`` / ``negatives[i]`` are the passage rows labelled 1 / 0 for question i:
    its distractors in a random order, then one gold paragraph of another question.
    """

    questions: tuple[str, ...]
    passages: tuple[str, ...]
    positives: tuple[tuple[int, ...], ...]
    negatives: tuple[tuple[int, ...], ...]


def pair_set(examples: Sequence[QAExample], rng: random.Random) -> PairSet:
    """Gold paragraphs are positive; the question's other paragraphs and one gold paragraph
    of a random other question are negative. Questions without gold paragraphs are skipped."""
    rows: dict[str, int] = {}

    def row(text: str) -> int:
        return rows.setdefault(text, len(rows))

    kept = [e for e in examples if e.supporting_passages]
    golds = [
        [row(passage_text(e.passages[i].title, e.passages[i].text)) for i in e.supporting_passages]
        for e in kept
    ]
    positives, negatives = [], []
    for n, example in enumerate(kept):
        gold = set(example.supporting_passages)
        distractors = [
            row(passage_text(p.title, p.text))
            for i, p in enumerate(example.passages)
            if i not in gold
        ]
        rng.shuffle(distractors)
        other = [g for j, g in enumerate(golds) if j != n]
        synthetic = [rng.choice(rng.choice(other))] if other else []
        positives.append(tuple(golds[n]))
        negatives.append(tuple(dict.fromkeys(d for d in distractors + synthetic
                                             if d not in golds[n])))  # fmt: skip
    return PairSet(tuple(e.question for e in kept), tuple(rows), tuple(positives),
                   tuple(negatives))  # fmt: skip


@attrs.frozen
class TrainConfig:
    """Training settings (defaults: docs/decisions.md §2, and the authors' code where the paper
    is silent)."""

    epochs: int = 30
    batch_size: int = 16
    lr: float = 5e-4
    decay: float = 0.95
    margin: float = 0.2
    penalty: float = 1.0
    query_weight: float = 8.0
    noise: float = 0.01
    validation: float = 0.3
    seed: int = 0


def triplets(pairs: PairSet, questions: Sequence[int]) -> list[tuple[int, int, int]]:
    return [(q, p, n) for q in questions for p in pairs.positives[q] for n in pairs.negatives[q]]


def train(
    query_vectors: FloatArray,
    passage_vectors: FloatArray,
    pairs: PairSet,
    train_questions: Sequence[int],
    config: TrainConfig,
    base: str = "",
    progress: Callable[[int, float], None] | None = None,
    device: Resolved = "cpu",
) -> tuple[LinearAdapter, list[float]]:
    """Fit the adapter on the triplets of ``train_questions`` on ``device``; returns it and
    the mean loss of every epoch. Deterministic for a given seed (and device): the starting
    weights are drawn on the CPU, so both devices start from the same."""
    import torch

    torch.manual_seed(config.seed)
    q0 = torch.from_numpy(np.asarray(query_vectors, dtype=np.float32)).to(device)
    p0 = torch.from_numpy(np.asarray(passage_vectors, dtype=np.float32)).to(device)
    weights = starting_weights(query_vectors.shape[1], config, device)
    optimiser = torch.optim.Adam(weights, lr=config.lr)
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimiser, gamma=config.decay)
    data = triplets(pairs, train_questions)
    rng = random.Random(config.seed)  # noqa: S311 (reproducible shuffling)
    history = []
    for epoch in range(config.epochs):
        rng.shuffle(data)
        total = 0.0
        for start in range(0, len(data), config.batch_size):
            batch = torch.tensor(data[start : start + config.batch_size], device=device)
            loss = batch_loss(q0, p0, batch, weights, config)
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            total += float(loss.detach()) * len(batch)
        schedule.step()
        history.append(total / max(len(data), 1))
        if progress:
            progress(epoch + 1, history[-1])
    wq, wp, bq, bp = (w.detach().cpu().numpy().astype(np.float32) for w in weights)
    return LinearAdapter(wq, bq, wp, bp, base=base), history


def starting_weights(dim: int, config: TrainConfig, device: Resolved) -> list[torch.nn.Parameter]:
    """The adapter's parameters to fit, ``[wq, wp, bq, bp]``: maps near the identity and
    biases near zero (``config.noise``), drawn on the CPU and moved to ``device``."""
    import torch

    def near_identity() -> torch.Tensor:
        return torch.eye(dim) + config.noise * torch.randn(dim, dim)

    def parameter(t: torch.Tensor) -> torch.nn.Parameter:
        return torch.nn.Parameter(t.to(device))

    wq = parameter(near_identity())
    wp = parameter(near_identity())
    bq = parameter(config.noise * torch.randn(dim))
    bp = parameter(config.noise * torch.randn(dim))
    return [wq, wp, bq, bp]


def batch_loss(
    q0: torch.Tensor,
    p0: torch.Tensor,
    batch: torch.Tensor,
    weights: Sequence[torch.Tensor],
    config: TrainConfig,
) -> torch.Tensor:
    """The loss of one batch of (question, positive, negative) triplets: the margin hinge
    plus the change penalty (how far the adapter moves the passages, and the queries weighted
    ``config.query_weight``), as Patwa et al.'s code computes it."""
    import torch

    wq, wp, bq, bp = weights
    qi, pi, ni = batch[:, 0], batch[:, 1], batch[:, 2]
    q = torch.nn.functional.normalize(q0[qi] @ wq.T + bq, dim=1)
    pos = torch.nn.functional.normalize(p0[pi] @ wp.T + bp, dim=1)
    neg = torch.nn.functional.normalize(p0[ni] @ wp.T + bp, dim=1)
    hinge = torch.relu(config.margin - (q * pos).sum(1) + (q * neg).sum(1)).mean()
    change = ((pos - p0[pi]) ** 2).sum(1).mean() + ((neg - p0[ni]) ** 2).sum(1).mean()
    change = change / 2 + config.query_weight * ((q - q0[qi]) ** 2).sum(1).mean()
    return hinge + config.penalty * change
