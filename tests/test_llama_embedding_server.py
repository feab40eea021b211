"""A real embedding server no one here wrote: llama.cpp's OpenAI-compatible server (the
``llama_cpp.server`` chainrag builds) serving the shipped Qwen2.5-Coder-0.5B GGUF, reached by
the ``litellm`` embedder through ``api_base`` as a vLLM or TEI server is.

The Qwen GGUFs carry no pooling metadata, and the server has no pooling setting: with
``--embedding true`` alone it answers each input with one vector per token. A GGUF metadata
override, ``--kv_overrides qwen2.pooling_type=int:1``, makes llama.cpp mean-pool, and the server
then answers one vector an input (docs/encoders.md). Part of the README's test command.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from chainrag.components.index.remote_embedders import LiteLLMEmbedder
from chainrag.context import StageContext
from chainrag.core.context import EncoderLedger, ModelStore
from chainrag.data.datasets import load_dataset
from chainrag.llm import open_llm
from chainrag.llm.server import LocalServer, server_command
from chainrag.recipes import models
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.run.question import answer_question
from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import need_model

ROOT = Path(__file__).resolve().parents[1]
MODEL = "qwen2.5-coder-0.5b"
POOLED = ["--embedding", "true", "--kv_overrides", "qwen2.pooling_type=int:1"]
"""The server's embedding mode, mean-pooled by a metadata override (the GGUF names no pooling)."""
TEXTS = ["Paris is the capital of France.", "The cat sat on the mat.", "It opened in 1889."]


def embedding_server() -> LocalServer:
    """llama.cpp's plain server (``reuse``: ``python -m llama_cpp.server``) in embedding mode,
    on one thread (the machine is shared), not started."""
    model = models.get_model(MODEL)
    file = models.require(model)
    return LocalServer(model, file, ready_timeout_s=240.0, command=lambda port: [
        *server_command(file, model.name, port, 512, 1, "reuse"), *POOLED])  # fmt: skip


def embedded_alone(api_base: str, alias: str, text: str) -> np.ndarray:
    """The server's vector of ``text`` sent by itself, unit length (a raw request, no store)."""
    body = json.dumps({"model": alias, "input": text}).encode()
    request = urllib.request.Request(f"{api_base}/embeddings", data=body,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=120) as answer:
        row = np.asarray(json.load(answer)["data"][0]["embedding"], dtype=np.float64)
    assert row.ndim == 1  # one pooled vector, not one a token
    return row / np.linalg.norm(row)


@pytest.mark.slow
def test_llama_cpp_serves_one_pooled_vector_an_input_to_the_litellm_embedder() -> None:
    need_model(MODEL)
    with embedding_server() as server:
        embedder = LiteLLMEmbedder(model=server.litellm_model, api_base=server.api_base)
        ledger = EncoderLedger()
        vectors = embedder(TEXTS, StageContext(encoders=ledger))
        alone = embedded_alone(server.api_base, server.alias, TEXTS[1])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 896)  # Qwen2.5-0.5B's width
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[1] @ alone) > 0.999  # batched as alone: no sequence saw another
    assert float(vectors[0] @ vectors[1]) < 0.99  # distinct texts, distinct vectors
    stages = dict(ledger.by_stage())
    assert stages["embed passages"].requests == 1 and stages["embed passages"].sent == 3


@pytest.mark.slow
def test_a_naive_rag_run_indexes_and_retrieves_through_the_llama_cpp_server() -> None:
    need_model(MODEL)
    fake = FakeOpenAI([], reply=standin_reply)
    with embedding_server() as server, serve(fake) as base:
        embedder = json.dumps(
            {
                "kind": "litellm",
                "model": server.litellm_model,
                "batch_size": 16,
                "api_base": server.api_base,
                "concurrency": 1,
                "timeout_s": 300,
            }
        )  # one thread serves: one request at a time
        llm = json.dumps({"kind": "litellm", "model": "openai/standin", "api_base": base})
        recipe = load_changed(ROOT / "recipes/baselines/naive.yaml",
                              parse_all([f"index.embedder={embedder}", f"llm={llm}"]))  # fmt: skip
        modelstore, usage = ModelStore(), []
        with open_llm(recipe.llm, cache_path=None, checked=True) as client:
            for example in load_dataset("musique", 1):
                prediction = answer_question(recipe, example, client, models=modelstore)
                assert any(step.retrieved for step in prediction.steps)
                usage.append(dict(prediction.encoder_usage))
    assert len(usage) == 1 and usage[0]["embed passages"].requests > 1  # the question's index
    assert usage[0]["embed queries"].sent == 1
