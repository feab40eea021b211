"""The FlagModel embedder gives FlagModel's vectors (L2-normalised again), bit for bit, by one
forward pass a batch: FlagModel runs its first batch twice (its batch-size probe, then the
batch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from chainrag.components.embedders import FlagModelEmbedder, l2_normalise
from chainrag.core.context import Context

TEXTS = [
    "Who directed The Serpent's Egg?",
    "Ingmar Bergman was a Swedish film director.",
    "Paris.",
    "The film was released in 1977 and stars Liv Ullmann and David Carradine as two artists.",
]


def forward_passes(model: Any) -> list[int]:
    """A counter of the network's forward passes (a list, appended to on every pass)."""
    calls: list[int] = []
    model.model.register_forward_hook(lambda *_: calls.append(1))
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("instruction", ["", "Represent this sentence for searching: "])
def test_one_batch_is_flag_models_vectors_bit_for_bit(instruction: str) -> None:
    ctx = Context()
    embedder = FlagModelEmbedder(batch_size=8, query_instruction=instruction)
    model = embedder._model(ctx)
    calls = forward_passes(model)
    for role, encode in (("query", model.encode_queries), ("passage", model.encode_corpus)):
        for texts in (TEXTS[:1], TEXTS):
            calls.clear()
            ours = embedder(texts, ctx, role=role)  # type: ignore[arg-type]
            assert len(calls) == 1
            calls.clear()
            theirs = l2_normalise(encode(list(texts), batch_size=8, convert_to_numpy=True))
            assert len(calls) == 2  # FlagModel's probe and its batch
            assert ours.dtype == np.float32
            assert np.array_equal(ours, theirs), (role, len(texts))


@pytest.mark.slow
def test_a_job_over_one_batch_goes_through_flag_model() -> None:
    ctx = Context()
    embedder = FlagModelEmbedder(batch_size=2)
    model = embedder._model(ctx)
    ours = embedder(TEXTS, ctx)
    theirs = l2_normalise(model.encode_corpus(TEXTS, batch_size=2, convert_to_numpy=True))
    assert np.array_equal(ours, theirs)
    small = embedder(TEXTS[:2], ctx)  # one batch: the one-pass path, the same vectors
    assert np.allclose(small, ours[:2], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("instruction", ["", "Represent this sentence for searching: "])
def test_a_job_of_several_batches_is_flag_models_vectors_without_its_probe(
    instruction: str,
) -> None:
    ctx = Context()
    embedder = FlagModelEmbedder(batch_size=3, query_instruction=instruction)
    model = embedder._model(ctx)
    calls = forward_passes(model)
    texts = TEXTS * 2 + ["A short one.", "Liv Ullmann starred in it."]  # 10 texts: 4 batches
    for role, encode in (("query", model.encode_queries), ("passage", model.encode_corpus)):
        calls.clear()
        ours = embedder(texts, ctx, role=role)  # type: ignore[arg-type]
        assert len(calls) == 4
        calls.clear()
        theirs = l2_normalise(encode(texts, batch_size=3, convert_to_numpy=True))
        assert len(calls) == 5  # FlagModel's probe and its four batches
        assert np.array_equal(ours, theirs), role
