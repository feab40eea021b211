"""What the adapter and the distilled reranker share: the error a training run refuses its
input with, how it reports its progress, a paragraph's text as both embed and score it, and the
split of questions into training and held-out sets (by question, never by pair, so no question
is seen on both sides)."""

from __future__ import annotations

import random
from collections.abc import Callable

from chainrag.core.errors import ChainragError

TRAIN_SETS = ("musique_train", "hotpotqa_train")
"""HippoRAG's train questions: what both train on by default."""

Progress = Callable[[str, int, int, dict[str, str]], None]
"""``progress(label, done, total, postfix)``: a stage's count so far, e.g. ``("training", 3,
30, {"loss": "0.1234"})``; :class:`chainrag.cli.common.Progress` draws it as a bar."""

Say = Callable[[str], None]
"""Where a training run writes a line about what it does next (the command echoes it)."""


class TrainingError(ChainragError):
    """A training run cannot start: too few questions, a teacher that is missing or unknown."""


def silent(*_: object) -> None:
    """The default :data:`Say` and :data:`Progress`: nothing is shown."""


def passage_text(title: str, text: str) -> str:
    """``title: text``, or the text alone when there is no title."""
    return f"{title}: {text}" if title else text


def split_questions(n: int, validation: float, seed: int) -> tuple[list[int], list[int]]:
    """Question indexes for training and validation (by question, never by pair)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)  # noqa: S311 (a reproducible split, not security)
    cut = max(1, round(n * validation)) if n > 1 else 0
    return sorted(order[cut:]), sorted(order[:cut])
