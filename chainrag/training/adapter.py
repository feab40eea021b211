"""Patwa et al.'s linear adapter from training questions to a saved file and its report.

:func:`train_adapter` is ``chainrag train adapter``: it reads the HippoRAG train questions,
embeds their pairs with the base embedder, fits the adapter
(:mod:`~chainrag.training.adapter_fit`), measures separation and strict Hit@K before and after
(:mod:`~chainrag.training.adapter_eval`), writes the adapter file (its header holds the report)
and the report beside it as JSON, and returns the report as an :class:`AdapterReport`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import attrs

from chainrag.components.index.linear_adapter import LinearAdapter
from chainrag.context import StageContext
from chainrag.core.device import Device, Resolved, resolve
from chainrag.core.types import FloatArray, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.index.build import EmbeddingCache
from chainrag.protocols.context import Context
from chainrag.protocols.index import Embedder, EmbedRole
from chainrag.training.adapter_eval import Separation, separation, strict_hits
from chainrag.training.adapter_fit import PairSet, TrainConfig, pair_set, train, triplets
from chainrag.training.common import (
    TRAIN_SETS,
    Progress,
    Say,
    TrainingError,
    silent,
    split_questions,
)

EVAL_SETS = ("musique", "hotpotqa", "2wiki")
DEFAULTS = TrainConfig()

T = TypeVar("T")


@attrs.frozen
class BaseAndAdapted(Generic[T]):
    """One measure with the base embeddings and with the adapter's."""

    base: T
    adapted: T


@attrs.frozen
class AdapterReport:
    """What ``train adapter`` did: the split, the settings, each measure before and after,
    the loss of every epoch, the seconds it took and where it wrote the adapter."""

    out: Path
    train_sets: tuple[str, ...]
    train_questions: int
    validation_questions: int
    paragraphs: int
    triplets: int
    config: TrainConfig
    separation: BaseAndAdapted[Separation]
    strict_hit: Mapping[str, BaseAndAdapted[Mapping[int, float]]]
    """Strict Hit@K per dev set: K → share of questions."""
    loss: tuple[float, ...]
    seconds: float

    @property
    def json_path(self) -> Path:
        """The report beside the adapter: ``out`` with ``.json`` for its suffix."""
        return self.out.with_suffix(".json")

    def as_json(self) -> dict[str, Any]:
        """The report as written to :attr:`json_path` and into the adapter's header."""
        return {
            "train_sets": list(self.train_sets),
            "questions": {"train": self.train_questions, "validation": self.validation_questions},
            "config": attrs.asdict(self.config),
            "separation": {
                "base": attrs.asdict(self.separation.base),
                "adapted": attrs.asdict(self.separation.adapted),
            },
            "strict_hit": {
                name: {"base": dict(hits.base), "adapted": dict(hits.adapted)}
                for name, hits in self.strict_hit.items()
            },
            "loss": list(self.loss),
            "seconds": self.seconds,
        }

    def table(self) -> str:
        """The measures as a Markdown table: metric, base, adapted."""
        before, after = self.separation.base, self.separation.adapted
        rows = [
            ("separation accuracy (validation, train threshold)",
             f"{100 * before.accuracy:.1f}%", f"{100 * after.accuracy:.1f}%"),
            ("separation accuracy (validation, oracle threshold)",
             f"{100 * before.oracle_accuracy:.1f}%", f"{100 * after.oracle_accuracy:.1f}%"),
            ("Pearson r", f"{before.pearson_r:.3f}", f"{after.pearson_r:.3f}"),
        ]  # fmt: skip
        for name, hits in self.strict_hit.items():
            rows += [(f"{name} strict Hit@{k}", f"{100 * hits.base[k]:.1f}%",
                      f"{100 * hits.adapted[k]:.1f}%") for k in hits.base]  # fmt: skip
        lines = ["| metric | base | adapted |", "|---|---|---|"]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def train_adapter(
    base: Embedder,
    out: Path,
    *,
    train_sets: Sequence[str] = TRAIN_SETS,
    eval_sets: Sequence[str] = EVAL_SETS,
    eval_limit: int = 200,
    config: TrainConfig = DEFAULTS,
    cache: EmbeddingCache | None = None,
    say: Say = silent,
    progress: Progress = silent,
    device: Device = "auto",
) -> AdapterReport:
    """Train Patwa et al.'s adapter over ``base`` on ``train_sets`` (gold paragraphs positive;
    distractors and other questions' gold negative), split by question; measure it on the
    validation questions and, by strict Hit@K, on the first ``eval_limit`` questions of each
    of ``eval_sets``; save it to ``out`` and its report beside it. The fit runs on ``device``,
    as an encoder's ``device`` says (:mod:`chainrag.core.device`).

    Raises:
        TrainingError: fewer than 2 training questions have gold paragraphs.
        ChainragError: a dataset cannot be read.
    """
    started = time.perf_counter()
    on = resolve(device, "train adapter")
    pairs, fit_q, val_q = training_pairs(train_sets, config, say)
    dev = {name: load_dataset(name, eval_limit) for name in eval_sets}
    ctx, cache = StageContext(), cache or EmbeddingCache()
    say("embedding with the base embedder…")
    queries, passages = embedded(base, pairs, cache, ctx)
    trained, history = fit_adapter(queries, passages, pairs, fit_q, config, repr(base), progress,
                                   on)  # fmt: skip
    adapted = (trained.apply(queries, "query"), trained.apply(passages, "passage"))
    measured = BaseAndAdapted(separation(queries, passages, pairs, fit_q, val_q),
                              separation(*adapted, pairs, fit_q, val_q))  # fmt: skip
    hits = strict_hit_of(dev, base, trained, cache, ctx, say)
    report = AdapterReport(
        out=out,
        train_sets=tuple(train_sets),
        train_questions=len(fit_q),
        validation_questions=len(val_q),
        paragraphs=len(pairs.passages),
        triplets=len(triplets(pairs, fit_q)),
        config=config,
        separation=measured,
        strict_hit=hits,
        loss=tuple(history),
        seconds=round(time.perf_counter() - started, 1),
    )
    return saved(trained, report)


def embedded(
    base: Embedder, pairs: PairSet, cache: EmbeddingCache, ctx: Context
) -> tuple[FloatArray, FloatArray]:
    """The pairs' questions and passages embedded by ``base`` (through ``cache``)."""
    queries = cache.embed(base, pairs.questions, ctx, role="query")
    return queries, cache.embed(base, pairs.passages, ctx, role="passage")


def saved(trained: LinearAdapter, report: AdapterReport) -> AdapterReport:
    """``report``, once the adapter is saved at its ``out`` (the report in its header) and
    the report beside it."""
    trained.save(report.out, {"report": report.as_json()})
    report.json_path.write_text(json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8")
    return report


def fit_adapter(
    queries: FloatArray, passages: FloatArray, pairs: PairSet, fit_q: Sequence[int],
    config: TrainConfig, base: str, progress: Progress, device: Resolved,
) -> tuple[LinearAdapter, list[float]]:  # fmt: skip
    """The adapter fit on ``fit_q``'s triplets on ``device`` (:func:`train`), and its loss
    history; ``progress`` hears each epoch."""

    def epoch_done(epoch: int, loss: float) -> None:
        progress("training", epoch, config.epochs, {"loss": f"{loss:.4f}"})

    progress("training", 0, config.epochs, {})
    return train(queries, passages, pairs, fit_q, config, base, epoch_done, device=device)


def training_pairs(
    train_sets: Sequence[str], config: TrainConfig, say: Say
) -> tuple[PairSet, list[int], list[int]]:
    """The pairs of ``train_sets``' questions (gold paragraphs positive; distractors and other
    questions' gold negative) and the questions split into training and validation, said.

    Raises:
        TrainingError: fewer than 2 training questions have gold paragraphs.
    """
    examples = [e for name in train_sets for e in load_dataset(name)]
    pairs = pair_set(examples, random.Random(config.seed))  # noqa: S311 (reproducible sampling)
    if len(pairs.questions) < 2:
        raise TrainingError("fewer than 2 training questions with gold paragraphs")
    fit_q, val_q = split_questions(len(pairs.questions), config.validation, config.seed)
    say(f"{len(pairs.questions)} questions ({len(fit_q)} train / {len(val_q)} validation), "
        f"{len(pairs.passages)} paragraphs, {len(triplets(pairs, fit_q))} training "
        "triplets")  # fmt: skip
    return pairs, fit_q, val_q


def strict_hit_of(
    dev: Mapping[str, Sequence[QAExample]], base: Embedder, trained: LinearAdapter,
    cache: EmbeddingCache, ctx: Context, say: Say,
) -> dict[str, BaseAndAdapted[Mapping[int, float]]]:  # fmt: skip
    """Strict Hit@K of each dev set's questions, before and after the adapter, said."""
    hits = {}
    for name, questions in dev.items():
        say(f"strict Hit@K on {name} ({len(questions)} questions)…")
        hits[name] = dev_hits(questions, base, trained, cache, ctx)
    return hits


def dev_hits(
    questions: Sequence[QAExample],
    base: Embedder,
    adapter: LinearAdapter,
    cache: EmbeddingCache,
    ctx: Context,
) -> BaseAndAdapted[Mapping[int, float]]:
    """Strict Hit@K of ``questions`` with the base embeddings and with the adapter's."""

    def plain(texts: Sequence[str], role: EmbedRole) -> FloatArray:
        return cache.embed(base, list(texts), ctx, role=role)

    def adapted(texts: Sequence[str], role: EmbedRole) -> FloatArray:
        return adapter.apply(plain(texts, role), role)

    return BaseAndAdapted(strict_hits(questions, plain), strict_hits(questions, adapted))
