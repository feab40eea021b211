"""Seed 002's reranker distillation: a small cross-encoder regresses a teacher's scores.

The student starts from the offline all-MiniLM-L6-v2 (its encoder; the one-output regression
head is new) and is trained with MSE between its sigmoid score and the teacher's score of each
(question, paragraph) pair of the training questions, all of a question's paragraphs (gold and
distractors). The teacher is, in order of preference (the issue's order): a local
FlagReranker/CrossEncoder folder, the LLM as a 0–10 relevance judge, or the gold labels (1 for
a gold paragraph, 0 otherwise) when neither is available. Questions are split into train and
held-out sets. On held-out questions the student reranks each question's paragraphs and is
compared with the dense order (no reranker) and with the teacher: NDCG@10 against the
teacher's scores (the teacher scores 1 by definition), strict Hit@K, MRR, and milliseconds per
question. The saved folder is a plain Hugging Face sequence-classification model, usable as
``{kind: cross_encoder, model_path: DIR}``.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from chainrag.adapter import passage_text
from chainrag.types import QAExample


@attrs.frozen
class Pair:
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


# --------------------------------------------------------------------------- teachers


def gold_teacher(pairs: Sequence[Pair]) -> np.ndarray:
    return np.asarray([1.0 if p.gold else 0.0 for p in pairs], dtype=np.float32)


def cross_encoder_teacher(path: str, pairs: Sequence[Pair], batch_size: int = 16) -> np.ndarray:
    """Scores in 0..1 (the CrossEncoder's sigmoid) of a local reranker folder."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(path, device="cpu")
    scores = model.predict([[p.query, p.passage] for p in pairs], batch_size=batch_size,
                           show_progress_bar=False)  # fmt: skip
    return np.asarray(scores, dtype=np.float32).reshape(len(pairs), -1)[:, 0]


_NUMBER = re.compile(r"\b(10|[0-9])\b")


def relevance_score(text: str) -> float | None:
    """The first 0–10 integer in a reply, scaled to 0..1; None if there is none."""
    match = _NUMBER.search(text)
    return None if match is None else int(match.group(1)) / 10


def llm_teacher(
    llm: Any, pairs: Sequence[Pair], progress: Callable[[int], object] | None = None
) -> tuple[np.ndarray, int]:
    """The LLM's 0–10 relevance judgement of every pair, scaled to 0..1; unreadable replies
    score 0 and are counted."""
    from chainrag.llm.prompts import load_prompt

    prompt = load_prompt("relevance")
    scores, unreadable = [], 0
    for i, pair in enumerate(pairs):
        reply = llm.complete(prompt.request(question=pair.query, passage=pair.passage))
        score = relevance_score(reply.text)
        unreadable += score is None
        scores.append(score or 0.0)
        if progress:
            progress(i + 1)
    return np.asarray(scores, dtype=np.float32), unreadable


# --------------------------------------------------------------------------- the student


@attrs.frozen
class DistillConfig:
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
) -> tuple[Any, Any, list[float]]:
    """(model, tokenizer, mean loss per epoch) of a one-output cross-encoder trained with MSE
    between sigmoid(logit) and the teacher's 0..1 scores."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    model = AutoModelForSequenceClassification.from_pretrained(base_path, num_labels=1)
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
                                return_tensors="pt")  # fmt: skip
            logits = model(**encoded).logits.squeeze(-1)
            target = torch.from_numpy(np.asarray(targets[batch], dtype=np.float32))
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


def student_scores(model: Any, tokenizer: Any, pairs: Sequence[Pair], max_length: int) -> Any:
    import torch

    with torch.no_grad():
        encoded = tokenizer(
            [p.query for p in pairs], [p.passage for p in pairs], padding=True, truncation=True,
            max_length=max_length, return_tensors="pt",
        )  # fmt: skip
        return torch.sigmoid(model(**encoded).logits.squeeze(-1)).numpy()


# --------------------------------------------------------------------------- evaluation


def ndcg(order: Sequence[int], gains: np.ndarray, k: int = 10) -> float:
    """NDCG@k of ranking ``order`` with graded ``gains`` (here: the teacher's scores)."""
    ideal = np.sort(gains)[::-1][:k]
    idcg = sum(float(g) / math.log2(r + 2) for r, g in enumerate(ideal))
    dcg = sum(float(gains[i]) / math.log2(r + 2) for r, i in enumerate(order[:k]))
    return dcg / idcg if idcg > 0 else 0.0


def ranking_metrics(
    orders: Sequence[Sequence[int]],
    golds: Sequence[set[int]],
    teacher: Sequence[np.ndarray],
    ks: Sequence[int] = (2, 3, 4, 5),
) -> dict[str, float]:
    """Mean NDCG@10 against the teacher, strict Hit@K and MRR over questions."""
    both = list(zip(orders, golds, strict=True))
    out = {"ndcg@10": float(np.mean([ndcg(o, t) for o, t in zip(orders, teacher, strict=True)]))}
    for k in ks:
        out[f"hit@{k}"] = float(np.mean([g <= set(o[:k]) for o, g in both]))
    ranks = [next((r for r, i in enumerate(o, 1) if i in g), None) for o, g in both]
    out["mrr"] = float(np.mean([1 / r if r else 0.0 for r in ranks]))
    return out


def by_score(scores: np.ndarray) -> list[int]:
    """Indexes best first; ties keep the earlier index."""
    return [int(i) for i in np.lexsort((np.arange(len(scores)), -np.asarray(scores)))]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start
