"""Seed 002's linear adapter: file format, pairs and split, training at toy size, the embedder
wrapper and its cache identity, and the ``train adapter`` command."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.components.index.embedders import HashedBagOfWords, l2_normalise
from chainrag.components.index.linear_adapter import (
    FORMAT,
    AdaptedEmbedder,
    AdapterError,
    LinearAdapter,
)
from chainrag.context import StageContext
from chainrag.core.types import Passage, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.index.build import EmbeddingCache
from chainrag.training.adapter_eval import separation, strict_hits
from chainrag.training.adapter_fit import PairSet, TrainConfig, pair_set, train
from chainrag.training.common import split_questions


def test_identity_adapter_changes_nothing_and_round_trips(tmp_path: Path) -> None:
    x = l2_normalise(np.random.default_rng(0).normal(size=(5, 8)))
    identity = LinearAdapter.identity(8, "base")
    assert np.allclose(identity.apply(x, "query"), x, atol=1e-6)
    rng = np.random.default_rng(1)
    trained = LinearAdapter(*(rng.normal(size=s).astype(np.float32)
                              for s in [(8, 8), (8,), (8, 8), (8,)]), base="b")  # fmt: skip
    trained.save(tmp_path / "a.npz", {"note": 1})
    loaded = LinearAdapter.load(tmp_path / "a.npz")
    assert np.array_equal(loaded.wq, trained.wq) and loaded.base == "b"
    q, p = loaded.apply(x, "query"), loaded.apply(x, "passage")
    assert not np.allclose(q, p) and np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-5)
    with pytest.raises(AdapterError, match="adapter is 8-dimensional, embeddings are 3"):
        loaded.apply(np.ones((2, 3), dtype=np.float32), "query")


def test_bad_adapter_files_are_named(tmp_path: Path) -> None:
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(AdapterError, match=r"junk\.npz: not a readable adapter file"):
        LinearAdapter.load(junk)
    other = tmp_path / "other.npz"
    np.savez(other, header=np.array(json.dumps({"format": "something else"})))
    with pytest.raises(AdapterError, match=r"other\.npz: not a chainrag-linear-adapter/1"):
        LinearAdapter.load(other)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, wq=np.eye(3), bq=np.zeros(2), wp=np.eye(3), bp=np.zeros(3),
             header=np.array(json.dumps({"format": FORMAT})))  # fmt: skip
    with pytest.raises(AdapterError, match="inconsistent shapes"):
        LinearAdapter.load(wrong)


def _example(i: int, gold: tuple[int, ...], n: int = 5) -> QAExample:
    passages = tuple(Passage(str(j), f"T{i}-{j}", f"text {i} {j}") for j in range(n))
    return QAExample(str(i), "toy", f"question {i}?", passages, ("a",), supporting_passages=gold)


def test_pairs_and_the_split_by_question() -> None:
    examples = [_example(i, (0, 2)) for i in range(6)] + [_example(9, ())]
    pairs = pair_set(examples, random.Random(0))
    assert len(pairs.questions) == 6  # the question without gold is skipped
    for q in range(6):
        positives = {pairs.passages[r] for r in pairs.positives[q]}
        negatives = [pairs.passages[r] for r in pairs.negatives[q]]
        assert positives == {f"T{q}-0: text {q} 0", f"T{q}-2: text {q} 2"}
        assert not positives & set(negatives)
        assert len(negatives) == 4 and not negatives[-1].startswith(f"T{q}-")  # synthetic last
    train, validation = split_questions(10, 0.3, seed=0)
    assert len(validation) == 3 and not set(train) & set(validation)
    assert sorted(train + validation) == list(range(10))
    assert split_questions(10, 0.3, seed=0) == (train, validation)


def _rotated_toy(n: int = 60, dim: int = 16) -> tuple[np.ndarray, np.ndarray, PairSet]:
    """Gold paragraphs are a fixed rotation of their question; negatives sit next to it: the
    base cosine ranks them the wrong way round, a passage map can learn to undo it."""
    rng = np.random.default_rng(0)
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    queries = l2_normalise(rng.normal(size=(n, dim)))
    positives = l2_normalise(queries @ rotation.T + 0.1 * rng.normal(size=(n, dim)))
    negatives = l2_normalise(queries + 0.8 * rng.normal(size=(n, dim)))
    passages = np.vstack([positives, negatives]).astype(np.float32)
    pairs = PairSet(
        tuple(f"q{i}" for i in range(n)),
        tuple(f"p{i}" for i in range(2 * n)),
        tuple((i,) for i in range(n)),
        tuple((n + i,) for i in range(n)),
    )
    return queries, passages, pairs


def test_training_learns_to_separate_on_held_out_questions() -> None:
    queries, passages, pairs = _rotated_toy(n=120)
    fit, held_out = split_questions(len(pairs.questions), 0.3, seed=0)
    config = TrainConfig(epochs=40, lr=3e-2, penalty=0.0, query_weight=0.0, margin=0.5)
    adapter, history = train(queries, passages, pairs, fit, config)
    assert history[-1] < history[0] / 2
    before = separation(queries, passages, pairs, fit, held_out)
    after = separation(
        adapter.apply(queries, "query"), adapter.apply(passages, "passage"), pairs, fit, held_out
    )
    assert after.accuracy >= before.accuracy + 0.2
    assert after.pearson_r > before.pearson_r + 0.3
    q, p = adapter.apply(queries, "query"), adapter.apply(passages, "passage")
    n = len(pairs.questions)

    def wins(qv: np.ndarray, pv: np.ndarray) -> float:  # gold above its negative, held out
        return float(np.mean([qv[i] @ pv[i] > qv[i] @ pv[n + i] for i in held_out]))

    assert wins(queries, passages) <= 0.2 and wins(q, p) >= 0.9
    again, _ = train(queries, passages, pairs, fit, config)
    assert np.array_equal(again.wp, adapter.wp)  # deterministic for a seed


def test_the_change_penalty_keeps_the_adapter_near_identity() -> None:
    queries, passages, pairs = _rotated_toy()
    free = TrainConfig(epochs=10, lr=1e-2, penalty=0.0, query_weight=0.0)
    held = TrainConfig(epochs=10, lr=1e-2, penalty=10.0)
    eye = np.eye(16)
    a, _ = train(queries, passages, pairs, list(range(40)), free)
    b, _ = train(queries, passages, pairs, list(range(40)), held)
    assert np.linalg.norm(b.wp - eye) < np.linalg.norm(a.wp - eye)


def test_strict_hits_need_every_gold_paragraph() -> None:
    examples = [_example(0, (1, 3)), _example(1, (4,))]

    def embed(texts: list[str], role: str) -> np.ndarray:  # scores: passage j gets 5 - j
        if role == "query":
            return np.ones((len(texts), 1), dtype=np.float32)
        return np.asarray([[5.0 - int(t.split()[-1])] for t in texts], dtype=np.float32)

    hits = strict_hits(examples, embed, ks=(2, 4, 5))
    assert hits == {2: 0.0, 4: 0.5, 5: 1.0}


def test_adapted_embedder_follows_the_file_content(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    LinearAdapter.identity(32).save(path)
    embedder = AdaptedEmbedder(HashedBagOfWords(dim=32), str(path))
    texts = ["Paris is in France.", "Rome"]
    plain = HashedBagOfWords(dim=32)(texts, StageContext())
    assert np.allclose(embedder(texts, StageContext()), plain, atol=1e-6)
    cache = EmbeddingCache(tmp_path / "embeddings")
    first = cache.embed(embedder, texts, StageContext())
    swapped = LinearAdapter.identity(32)
    swapped = LinearAdapter(swapped.wq, swapped.bq, -swapped.wp, swapped.bp)
    swapped.save(path)  # retrained into the same path
    second = cache.embed(embedder, texts, StageContext())
    assert np.allclose(second, -first, atol=1e-6)  # not the stale cached vectors
    missing = AdaptedEmbedder(HashedBagOfWords(), str(tmp_path / "missing.npz"))  # no check yet
    with pytest.raises(ValueError, match="is not a file"):  # issue 21: checked when it loads
        missing(texts, StageContext())


def test_train_adapter_command_at_toy_size(tmp_path: Path) -> None:
    out = tmp_path / "adapters" / "toy.npz"
    result = CliRunner().invoke(
        app,
        ["train", "adapter", "--out", str(out), "--embedder", "{kind: hashed_bow, dim: 32}",
         "--train", "musique_train", "--epochs", "2", "--eval", "musique", "--eval-limit", "4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "100 questions (70 train / 30 validation)" in result.output
    assert "| musique strict Hit@4 |" in result.output
    report = json.loads(out.with_suffix(".json").read_text())
    assert set(report["separation"]) == {"base", "adapted"} and len(report["loss"]) == 2
    assert set(report["strict_hit"]["musique"]["adapted"]) == {"2", "3", "4", "5"}
    adapter = LinearAdapter.load(out)
    assert adapter.dim == 32 and "HashedBagOfWords" in adapter.base
    examples = load_dataset("musique", 1)
    assert examples  # the adapter embeds real text
    vectors = AdaptedEmbedder(HashedBagOfWords(dim=32), str(out))(
        [examples[0].question], StageContext(), "query"
    )
    assert vectors.shape == (1, 32)
