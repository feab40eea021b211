"""Patwa et al.'s reranker distillation from training questions to a saved student and its report.

:func:`distill_reranker` is ``chainrag train reranker``: it reads the training questions,
has the teacher (:mod:`~chainrag.training.teachers`) score every (question, paragraph) pair,
trains the MiniLM student on the pairs of the training questions
(:mod:`~chainrag.training.distill_fit`), saves it, ranks the held-out questions' paragraphs
with the dense embedder, the teacher and the student (:mod:`~chainrag.training.distill_eval`),
writes ``distill_report.json`` into the student's folder and returns a :class:`DistillReport`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from chainrag.components.index.embedders import FlagModelEmbedder, offline_minilm_path
from chainrag.context import StageContext
from chainrag.core.device import Device, Resolved, resolve
from chainrag.data.datasets import load_dataset
from chainrag.index.build import EmbeddingCache
from chainrag.training.common import TRAIN_SETS, Progress, Say, silent, split_questions
from chainrag.training.distill_eval import RankingMetrics, held_out_rankings
from chainrag.training.distill_fit import (
    DistillConfig,
    Pair,
    epoch_size,
    pairs_of,
    student_scores,
    train_student,
)
from chainrag.training.teachers import Teacher, teacher_scores

DEFAULTS = DistillConfig()


@attrs.frozen
class DistillReport:
    """What ``train reranker`` did: the teacher, the split, the settings, the loss of every
    epoch, each ranking's measures on the held-out questions, the seconds it took, and the
    folder the student is in."""

    out: Path
    teacher: Teacher
    train_sets: tuple[str, ...]
    train_questions: int
    held_out_questions: int
    pairs: int
    unreadable_llm_scores: int
    config: DistillConfig
    loss: tuple[float, ...]
    metrics: Mapping[str, RankingMetrics]
    """By ranking: ``none (dense order)``, ``teacher``, ``student``."""
    seconds: float

    @property
    def json_path(self) -> Path:
        """The report in the student's folder: ``distill_report.json``."""
        return self.out / "distill_report.json"

    def as_json(self) -> dict[str, Any]:
        """The report as written to :attr:`json_path`."""
        return {
            "teacher": self.teacher.kind,
            "teacher_path": self.teacher.path,
            "train_sets": list(self.train_sets),
            "questions": {"train": self.train_questions, "held_out": self.held_out_questions},
            "pairs": self.pairs,
            "unreadable_llm_scores": self.unreadable_llm_scores,
            "config": attrs.asdict(self.config),
            "loss": list(self.loss),
            "metrics": {name: m.as_json() for name, m in self.metrics.items()},
            "seconds": self.seconds,
        }

    def table(self) -> str:
        """The rankings' measures as a Markdown table (Hit@K in %, "–" where not measured)."""
        rows = {name: m.as_json() for name, m in self.metrics.items()}
        keys = list(rows["student"])
        lines = ["| ranking | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        for name, values in rows.items():
            cells = ["–" if k not in values else f"{values[k]:.1f}" if k.startswith("ms") else
                     f"{100 * values[k]:.1f}" if k.startswith("hit") else f"{values[k]:.3f}"
                     for k in keys]  # fmt: skip
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def distill_reranker(
    out: Path,
    teacher: Teacher,
    *,
    train_sets: Sequence[str] = TRAIN_SETS,
    limit: int | None = None,
    config: DistillConfig = DEFAULTS,
    cache: EmbeddingCache | None = None,
    say: Say = silent,
    progress: Progress = silent,
    device: Device = "auto",
) -> DistillReport:
    """Distil ``teacher``'s scores of the first ``limit`` questions (all if None) of each of
    ``train_sets`` into a cross-encoder initialised from the offline MiniLM, split by
    question; save it to ``out`` and measure it on the held-out questions against the dense
    order (:class:`~chainrag.components.index.embedders.FlagModelEmbedder`) and the teacher. The
    student is trained (and a reranker teacher scores) on ``device``, as an encoder's
    ``device`` says (:mod:`chainrag.core.device`: ``auto`` is the GPU where torch sees one).

    Raises:
        ChainragError: a dataset, or the LLM teacher's recipe, cannot be read.
    """
    started = time.perf_counter()
    on = resolve(device, "train reranker")
    pairs, fit_q, held_q = distill_pairs(train_sets, limit, config)
    say(f"{len(fit_q) + len(held_q)} questions ({len(fit_q)} train / {len(held_q)} held out), "
        f"{len(pairs)} pairs; teacher: {teacher.kind}")  # fmt: skip
    scores, unreadable = teacher_scores(teacher, pairs, progress, device=on)
    fit = fit_pairs(pairs, held_q)
    model, tokenizer, history = fit_student([pairs[i] for i in fit], scores[fit], config,
                                            progress, on)  # fmt: skip
    save_student(model, tokenizer, out)
    student = partial(student_scores, model, tokenizer, max_length=config.max_length, device=on)
    metrics = held_out_rankings(pairs, scores, held_q, student, FlagModelEmbedder(),
                                cache or EmbeddingCache(), StageContext())  # fmt: skip
    report = DistillReport(
        out=out,
        teacher=teacher,
        train_sets=tuple(train_sets),
        train_questions=len(fit_q),
        held_out_questions=len(held_q),
        pairs=len(pairs),
        unreadable_llm_scores=unreadable,
        config=config,
        loss=tuple(history),
        metrics=metrics,
        seconds=round(time.perf_counter() - started, 1),
    )
    report.json_path.write_text(json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8")
    return report


def distill_pairs(
    train_sets: Sequence[str], limit: int | None, config: DistillConfig
) -> tuple[list[Pair], list[int], list[int]]:
    """Every (question, paragraph) pair of the first ``limit`` questions of each of
    ``train_sets``, and the questions split into training and held out."""
    pairs = pairs_of([e for name in train_sets for e in load_dataset(name, limit)])
    n_questions = len({p.question for p in pairs})
    fit_q, held_q = split_questions(n_questions, config.validation, config.seed)
    return pairs, fit_q, held_q


def fit_pairs(pairs: Sequence[Pair], held_out: Sequence[int]) -> list[int]:
    """The pairs (by position) of the questions not held out: what the student is fit on."""
    held = set(held_out)
    return [i for i, p in enumerate(pairs) if p.question not in held]


def fit_student(
    pairs: Sequence[Pair], scores: np.ndarray, config: DistillConfig, progress: Progress,
    device: Resolved,
) -> tuple[Any, Any, list[float]]:  # fmt: skip
    """The student (model, tokenizer) trained from the offline MiniLM on ``pairs`` and the
    teacher's ``scores`` of them on ``device``, and its loss history; ``progress`` hears each
    step."""
    batches = math.ceil(epoch_size(scores, config.balance) / config.batch_size)
    steps = config.epochs * batches

    def step_done(step: int, loss: float) -> None:
        progress("training the student", step, steps, {"loss": f"{loss:.4f}"})

    progress("training the student", 0, steps, {})
    return train_student(offline_minilm_path(), pairs, scores, config, step_done, device)


def save_student(model: Any, tokenizer: Any, out: Path) -> None:
    """The student's model and tokenizer saved in ``out`` (a cross-encoder folder)."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
