"""The FlagModel embedder gives FlagModel's vectors (L2-normalised again), bit for bit, by one
forward pass a batch: FlagModel runs its first batch twice (its batch-size probe, then the
batch). The embedder loads the network itself (without importing FlagEmbedding); FlagModel is
loaded here from the same folder, as the embedder loaded it before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from chainrag.components.index.embedders import (
    CPU_BATCH,
    FlagModelEmbedder,
    l2_normalise,
    offline_minilm_path,
)
from chainrag.context import StageContext

TEXTS = [
    "Who directed The Serpent's Egg?",
    "Ingmar Bergman was a Swedish film director.",
    "Paris.",
    "The film was released in 1977 and stars Liv Ullmann and David Carradine as two artists.",
]


def flag_model(embedder: FlagModelEmbedder) -> Any:
    """FlagEmbedding's own FlagModel for ``embedder``'s settings, on the CPU."""
    from FlagEmbedding import FlagModel

    model = FlagModel(
        embedder.model_path or offline_minilm_path(),
        pooling_method=embedder.pooling,
        normalize_embeddings=True,
        use_fp16=False,
        devices="cpu",
        query_instruction_for_retrieval=embedder.query_instruction or None,
        batch_size=embedder.batch_size,
        query_max_length=embedder.max_length,
        passage_max_length=embedder.max_length,
    )
    model.model.to("cpu").eval()
    return model


def forward_passes(model: Any) -> list[int]:
    """A counter of the network's forward passes (a list, appended to on every pass)."""
    calls: list[int] = []
    model.model.register_forward_hook(lambda *_: calls.append(1))
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("instruction", ["", "Represent this sentence for searching: "])
def test_one_batch_is_flag_models_vectors_bit_for_bit(instruction: str) -> None:
    ctx = StageContext()
    embedder = FlagModelEmbedder(batch_size=8, query_instruction=instruction, device="cpu")
    calls = forward_passes(embedder._model(ctx))
    model = flag_model(embedder)
    their_calls = forward_passes(model)
    for role, encode in (("query", model.encode_queries), ("passage", model.encode_corpus)):
        for texts in (TEXTS[:1], TEXTS):
            calls.clear()
            ours = embedder(texts, ctx, role=role)  # type: ignore[arg-type]
            assert len(calls) == 1
            their_calls.clear()
            theirs = l2_normalise(encode(list(texts), batch_size=8, convert_to_numpy=True))
            assert len(their_calls) == 2  # FlagModel's probe and its batch
            assert ours.dtype == np.float32
            assert np.array_equal(ours, theirs), (role, len(texts))


@pytest.mark.slow
def test_a_job_over_one_batch_goes_through_flag_model() -> None:
    ctx = StageContext()
    embedder = FlagModelEmbedder(batch_size=2, device="cpu")
    model = flag_model(embedder)
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
    ctx = StageContext()
    embedder = FlagModelEmbedder(batch_size=3, query_instruction=instruction, device="cpu")
    calls = forward_passes(embedder._model(ctx))
    model = flag_model(embedder)
    their_calls = forward_passes(model)
    texts = TEXTS * 2 + ["A short one.", "Liv Ullmann starred in it."]  # 10 texts: 4 batches
    for role, encode in (("query", model.encode_queries), ("passage", model.encode_corpus)):
        calls.clear()
        ours = embedder(texts, ctx, role=role)  # type: ignore[arg-type]
        assert len(calls) == 4
        their_calls.clear()
        theirs = l2_normalise(encode(texts, batch_size=3, convert_to_numpy=True))
        assert len(their_calls) == 5  # FlagModel's probe and its four batches
        assert np.array_equal(ours, theirs), role


@pytest.mark.slow
def test_on_the_cpu_a_forward_pass_takes_at_most_cpu_batch_texts() -> None:
    ctx = StageContext()
    embedder = FlagModelEmbedder(batch_size=CPU_BATCH + 8, device="cpu")
    calls = forward_passes(embedder._model(ctx))
    texts = [f"Sentence number {i} of a question's context." for i in range(CPU_BATCH + 1)]
    ours = embedder(texts, ctx)
    assert len(calls) == 2  # CPU_BATCH texts, then one
    model = flag_model(embedder)
    theirs = l2_normalise(model.encode_corpus(texts, batch_size=CPU_BATCH, convert_to_numpy=True))
    assert np.array_equal(ours, theirs)


@pytest.mark.slow
def test_last_token_pooling_is_each_texts_last_real_token() -> None:
    import torch

    ctx = StageContext()
    embedder = FlagModelEmbedder(pooling="last_token", device="cpu")
    model = embedder._model(ctx)
    texts = ["Paris.", "The film was released in 1977 and stars Liv Ullmann."]
    ours = embedder(texts, ctx)
    for text, vector in zip(texts, ours, strict=True):
        batch = model.tokenizer([text], return_tensors="pt")
        with torch.inference_mode():
            hidden = model.model(**batch).last_hidden_state[0, -1]
        alone = torch.nn.functional.normalize(hidden, dim=-1).numpy()
        assert np.allclose(vector, alone, atol=1e-5)
