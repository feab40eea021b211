"""The judge-steps probe's table: each judge's ROC AUC with its interval, on the measured and
the training questions, and its yes-rates at the threshold chosen on the training probes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from chainrag.experiments.judge_combination import FEATURES, combination
from chainrag.experiments.roc import auc_interval, best_threshold, roc_auc

if TYPE_CHECKING:
    from chainrag.experiments.step_probe import StepProbe

JUDGES = ("llm_yes_no", *FEATURES, "combined")


@attrs.frozen
class JudgeRow:
    """One judge's line of the table."""

    judge: str
    auc: float
    interval: tuple[float, float]
    train_auc: float
    threshold: float | None
    yes_insufficient: float
    yes_sufficient: float


def rows(measured: Sequence[StepProbe], train: Sequence[StepProbe]) -> list[JudgeRow]:
    """Each judge's AUC on ``measured`` and ``train``, its threshold chosen on ``train`` and
    its yes-rates on ``measured`` at that threshold (``llm_yes_no``: its own reply)."""
    scored: dict[str, tuple[list[float], list[float]]] = {
        j: ([p.score(j) for p in measured], [p.score(j) for p in train]) for j in JUDGES[:-1]
    }
    if train:
        combine = combination(train)
        scored["combined"] = (combine(measured), combine(train))
    y = [p.sufficient for p in measured]
    y_train = [p.sufficient for p in train]
    groups = [p.qid for p in measured]
    out = []
    for judge, (scores, train_scores) in scored.items():
        threshold = None
        if judge == "llm_yes_no":
            said = [s >= 0.5 for s in scores]
        else:
            threshold = best_threshold(train_scores, y_train) if train else math.nan
            said = [s >= threshold for s in scores]
        out.append(
            JudgeRow(
                judge,
                roc_auc(scores, y),
                auc_interval(scores, y, groups),
                roc_auc(train_scores, y_train) if train else math.nan,
                threshold,
                100 * _mean([s for s, ok in zip(said, y, strict=True) if not ok]),
                100 * _mean([s for s, ok in zip(said, y, strict=True) if ok]),
            )
        )
    return out


def _paragraphs(probes: Sequence[StepProbe]) -> str:
    """The probes' paragraphs each: ``2``, or ``1–2`` where they differ."""
    sizes = sorted({len(p.paragraphs) for p in probes}) or [0]
    return str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"


def _mean(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else math.nan


def table(measured: Sequence[StepProbe], train: Sequence[StepProbe], recipe: str) -> str:
    """The markdown table of :func:`rows` with a title and the probes' sizes (paragraphs and
    mean words)."""
    splits = measured[0].split if measured else "?"
    trained = train[0].split if train else "none"
    lines = [
        f"Sufficiency judges on {splits} sub-questions, thresholds chosen on {trained} "
        f"(recipe {recipe})",
        "",
        f"Measured: {len({p.qid for p in measured})} questions, {len(measured)} probes "
        f"({sum(p.sufficient for p in measured)} sufficient); training: "
        f"{len({p.qid for p in train})} questions, {len(train)} probes. "
        f"{_paragraphs(measured)} paragraphs a probe, "
        f"{sum(p.words for p in measured) / max(1, len(measured)):.0f} words on average.",
        "",
        "| judge | ROC AUC | 95% interval | AUC on training | threshold | yes on insufficient % "
        "| yes on sufficient % |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows(measured, train):
        threshold = "its reply" if r.threshold is None else f"{r.threshold:.3f}"
        lines.append(
            f"| {r.judge} | {r.auc:.3f} | {r.interval[0]:.3f}–{r.interval[1]:.3f} | "
            f"{r.train_auc:.3f} | {threshold} | {r.yes_insufficient:.1f} | "
            f"{r.yes_sufficient:.1f} |"
        )
    return "\n".join(lines)
