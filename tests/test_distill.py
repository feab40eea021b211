"""Seed 002's reranker distillation: teachers, ranking metrics, and the command at toy size
(the student it saves works as the ``cross_encoder`` reranker)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.retrieval.rerankers import CrossEncoderReranker
from chainrag.context import StageContext
from chainrag.core.types import Hit, Passage, QAExample
from chainrag.llm.fake import ScriptedLLM
from chainrag.training.distill_eval import by_score, ndcg, ranking_metrics
from chainrag.training.distill_fit import Pair, epoch_order, pairs_of
from chainrag.training.teachers import gold_teacher, llm_teacher, relevance_score


def test_pairs_cover_every_paragraph_of_questions_with_gold() -> None:
    passages = tuple(Passage(str(i), f"T{i}", f"text {i}") for i in range(3))
    examples = [
        QAExample("a", "t", "Q1?", passages, ("x",), supporting_passages=(1,)),
        QAExample("b", "t", "Q2?", passages, ("x",)),  # no gold: skipped
        QAExample("c", "t", "Q3?", passages, ("x",), supporting_passages=(0, 2)),
    ]
    pairs = pairs_of(examples)
    assert [(p.question, p.gold) for p in pairs] == [
        (0, False), (0, True), (0, False), (1, True), (1, False), (1, True)
    ]  # fmt: skip
    assert pairs[1].passage == "T1: text 1" and pairs[3].query == "Q3?"
    assert gold_teacher(pairs).tolist() == [0, 1, 0, 1, 0, 1]


@pytest.mark.parametrize(
    ("reply", "score"),
    [("7", 0.7), ("10", 1.0), ("Usefulness: 3/10", 0.3), ("0", 0.0), ("high", None)],
)
def test_relevance_scores(reply: str, score: float | None) -> None:
    assert relevance_score(reply) == score


def test_llm_teacher_counts_unreadable_replies() -> None:
    pairs = [Pair(0, "q", f"p{i}", i == 0) for i in range(3)]
    llm = ScriptedLLM({"relevance": ["9", "two", "1"]})
    scores, unreadable = llm_teacher(llm, pairs)
    assert np.allclose(scores, [0.9, 0.0, 0.1]) and unreadable == 1


def test_ndcg_and_ranking_metrics() -> None:
    gains = np.array([0.0, 1.0, 0.5])
    assert ndcg([1, 2, 0], gains) == pytest.approx(1.0)
    worst = (0 + 0.5 / math.log2(3) + 1 / math.log2(4)) / (1 + 0.5 / math.log2(3))
    assert ndcg([0, 2, 1], gains) == pytest.approx(worst)
    assert ndcg([0, 1], np.zeros(2)) == 0.0
    metrics = ranking_metrics([[1, 2, 0], [0, 1, 2]], [{1}, {2, 1}], [gains, gains], ks=(1, 2))
    assert metrics.hit[1] == 0.5 and metrics.hit[2] == 0.5
    assert metrics.mrr == pytest.approx((1 + 1 / 2) / 2)
    assert by_score(np.array([0.2, 0.9, 0.9])) == [1, 2, 0]


def test_balanced_epochs_draw_as_many_negatives_as_positives() -> None:
    import random

    targets = np.array([1.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0])
    rng = random.Random(0)
    epochs = [epoch_order(targets, True, rng) for _ in range(20)]
    for order in epochs:
        assert len(order) == len(set(order)) == 4
        assert sorted(i for i in order if targets[i] >= 0.5) == [0, 3]  # every positive
    assert len({i for order in epochs for i in order}) == 10  # negatives drawn anew each epoch
    assert sorted(epoch_order(targets, False, rng)) == list(range(10))
    flipped = epoch_order(1 - targets, True, rng)  # more high scores than low: the reverse
    assert len(flipped) == 4 and {0, 3} <= set(flipped)


def test_train_reranker_command_at_toy_size(tmp_path: Path) -> None:
    out = tmp_path / "student"
    result = CliRunner().invoke(
        app,
        ["train", "reranker", "--out", str(out), "--train", "musique_train", "--limit", "4",
         "--epochs", "1", "--max-length", "48", "--balance", "--lr", "1e-4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "4 questions (3 train / 1 held out), 80 pairs; teacher: gold" in result.output
    assert "| student |" in result.output and "| none (dense order) |" in result.output
    report = json.loads((out / "distill_report.json").read_text())
    assert report["teacher"] == "gold" and report["metrics"]["teacher"]["ndcg@10"] == 1.0
    assert set(report["metrics"]["student"]) >= {"ndcg@10", "hit@4", "mrr", "ms_per_question"}
    reranker = CrossEncoderReranker(str(out))
    ranked = reranker("q", (Hit(0, 0.1), Hit(1, 0.2)), ("a", "b"), StageContext())
    assert sorted(h.index for h in ranked) == [0, 1]


def test_train_reranker_rejects_a_missing_teacher(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["train", "reranker", "--out", str(tmp_path / "s"),
                                  "--teacher-path", str(tmp_path / "nope")])  # fmt: skip
    assert missing.exit_code == 1 and "does not exist" in missing.output
    no_llm = runner.invoke(app, ["train", "reranker", "--out", str(tmp_path / "s"),
                                 "--teacher", "llm"])  # fmt: skip
    assert no_llm.exit_code == 1 and "needs --llm-recipe" in no_llm.output
