"""The teachers a reranker is distilled from, each scoring (question, paragraph) pairs in 0..1.

In order of preference: a local FlagReranker/CrossEncoder folder, the LLM
as a 0–10 relevance judge, or the gold labels (1 for a gold paragraph, 0 otherwise) when
neither is available; or, named, a remote reranker through litellm (Patwa et al. distil from
Cohere's). :func:`choose_teacher` reads the command's options into a
:class:`Teacher`; :func:`teacher_scores` asks it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import attrs
import numpy as np

from chainrag.core.device import Resolved
from chainrag.core.paths import llm_cache_path
from chainrag.llm import open_llm
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import load_recipe
from chainrag.training.common import Progress, TrainingError, silent
from chainrag.training.distill_fit import Pair

TEACHERS = ("auto", "path", "llm", "gold")


@attrs.frozen
class Teacher:
    """Which teacher scores the pairs: a local reranker folder (``path``), the LLM of a
    recipe (``llm_recipe``), or the gold labels."""

    kind: Literal["path", "llm", "gold", "remote"]
    path: str | None = None
    llm_recipe: Path | None = None
    model: str | None = None
    """A remote reranker's litellm model string (``remote``: Patwa et al.'s Cohere teacher)."""
    api_base: str | None = None


def choose_teacher(
    teacher: str, path: str | None, llm_recipe: Path | None, api_base: str | None = None
) -> Teacher:
    """The teacher the options name; ``auto``: ``path`` if given, else the LLM of
    ``llm_recipe`` if given, else the gold labels; any other name is a remote reranker's
    litellm model string (``cohere/rerank-english-v3.0``; a server at ``api_base``).

    Raises:
        TrainingError: an unknown ``teacher``, a ``path`` that names nothing, or ``llm``
            without ``llm_recipe``.
    """
    if teacher not in TEACHERS:
        from chainrag.recipes.providers import unknown_model

        if reason := unknown_model(teacher):
            raise TrainingError(f"--teacher must be auto, path, llm, gold or a rerank model "
                                f"litellm knows, not {teacher!r}: {reason}")  # fmt: skip
        return Teacher("remote", path, llm_recipe, teacher, api_base)
    if teacher == "auto":
        teacher = "path" if path else "llm" if llm_recipe else "gold"
    if teacher == "path":
        if not (path and Path(path).exists()):
            raise TrainingError(f"--teacher-path {path!r} does not exist (a local reranker folder)")
        return Teacher("path", path, llm_recipe)
    if teacher == "llm":
        if llm_recipe is None:
            raise TrainingError(
                "--teacher llm needs --llm-recipe (a recipe whose llm: judges relevance)"
            )
        return Teacher("llm", path, llm_recipe)
    return Teacher("gold", path, llm_recipe)


def teacher_scores(
    teacher: Teacher, pairs: Sequence[Pair], progress: Progress = silent, device: Resolved = "cpu"
) -> tuple[np.ndarray, int]:
    """The teacher's score of every pair in 0..1, and how many LLM replies held no score
    (``progress("teacher (LLM)", done, total, {})`` after each LLM judgement); a reranker
    teacher runs on ``device``."""
    if teacher.kind == "path" and teacher.path is not None:
        return cross_encoder_teacher(teacher.path, pairs, device=device), 0
    if teacher.kind == "remote" and teacher.model is not None:
        return remote_teacher(teacher.model, teacher.api_base, pairs), 0
    if teacher.kind == "llm" and teacher.llm_recipe is not None:
        spec = load_recipe(teacher.llm_recipe).llm
        with open_llm(spec, cache_path=llm_cache_path()) as llm:
            progress("teacher (LLM)", 0, len(pairs), {})
            return llm_teacher(llm, pairs, lambda i: progress("teacher (LLM)", i, len(pairs), {}))
    return gold_teacher(pairs), 0


def gold_teacher(pairs: Sequence[Pair]) -> np.ndarray:
    """1 for a gold paragraph, 0 for any other."""
    return np.asarray([1.0 if p.gold else 0.0 for p in pairs], dtype=np.float32)


def cross_encoder_teacher(
    path: str, pairs: Sequence[Pair], batch_size: int = 16, device: Resolved = "cpu"
) -> np.ndarray:
    """Scores in 0..1 (the CrossEncoder's sigmoid) of a local reranker folder, computed on
    ``device``."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(path, device=device)
    scores = model.predict([[p.query, p.passage] for p in pairs], batch_size=batch_size,
                           show_progress_bar=False)  # fmt: skip
    return np.asarray(scores, dtype=np.float32).reshape(len(pairs), -1)[:, 0]


def remote_teacher(model: str, api_base: str | None, pairs: Sequence[Pair]) -> np.ndarray:
    """A remote reranker's scores (the ``litellm`` reranker: one search a question, each score
    paid for once), in 0..1: as sent where they are (Cohere's relevance scores), else their
    sigmoid (a served cross-encoder's logits)."""
    from chainrag.components.retrieval.remote_rerankers import LiteLLMReranker
    from chainrag.context import StageContext

    reranker, ctx = LiteLLMReranker(model=model, api_base=api_base), StageContext()
    by_query: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_query.setdefault(pair.query, []).append(i)
    scores = np.zeros(len(pairs), dtype=np.float64)
    for query, rows in by_query.items():
        scores[rows] = reranker.scores(query, [pairs[i].passage for i in rows], ctx)
    if scores.size and (scores.min() < 0 or scores.max() > 1):
        scores = 1 / (1 + np.exp(-scores))
    return scores.astype(np.float32)


_NUMBER = re.compile(r"\b(10|[0-9])\b")


def relevance_score(text: str) -> float | None:
    """The first 0–10 integer in a reply, scaled to 0..1; None if there is none."""
    match = _NUMBER.search(text)
    return None if match is None else int(match.group(1)) / 10


def llm_teacher(
    llm: LLM, pairs: Sequence[Pair], progress: Callable[[int], object] | None = None
) -> tuple[np.ndarray, int]:
    """The LLM's 0–10 relevance judgement of every pair, scaled to 0..1; unreadable replies
    score 0 and are counted."""
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
