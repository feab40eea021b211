"""The same request gets the same answer whatever came before it (issue 22), on the real 0.5B model.

The managed server evaluates every prompt in full (``prompt_cache: fresh``,
:mod:`chainrag.llm.fresh_server`), or keeps only the previous prompt's whole shared chunks
(``aligned``, the default), which must give the same logits bit for bit. These tests send one
request first, after a request that shares a long prefix with it (llama.cpp's prefix reuse
would evaluate only the rest), after itself, and after an unrelated one, and compare the
answers — and, more finely, the first token's log-probabilities, which the prefix-reusing
server changes (the control test). Skipped where the model or llama-cpp-python is absent
(``make test`` provides both), and failed there under CI.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from chainrag.components.retrieval.judges import numbered
from chainrag.core.types import LLMRequest
from chainrag.llm.prompts import load_prompt
from chainrag.llm.server import LocalServer, PromptCache
from chainrag.recipes import models

from .conftest import need_model

MODEL = "qwen2.5-coder-0.5b"
EVIDENCE = numbered(
    [
        "Ingmar Bergman was a Swedish film director born in Uppsala in 1918.",
        "He directed The Seventh Seal, Wild Strawberries and Persona.",
        "In his later years he lived on the island of Fårö, where he died in 2007.",
        "Fårö lies in the Baltic Sea, north of Gotland, and is part of Gotland Municipality.",
        "The Bergman Center on Fårö holds an annual Bergman Week each summer.",
        "Uppsala is the fourth-largest city of Sweden and home to its oldest university.",
    ]
    * 6
)
TARGET = load_prompt("answer_sub").request(
    evidence=EVIDENCE, question="On which island did Ingmar Bergman die?"
)
SAME_PREFIX = load_prompt("answer_sub").request(
    evidence=EVIDENCE, question="In which city was Ingmar Bergman born?"
)
UNRELATED = load_prompt("answer_short").request(
    context="Paris is the capital of France.", question="What is the capital of France?"
)
BEFORE: dict[str, LLMRequest | None] = {
    "nothing": None,
    "a request sharing its evidence": SAME_PREFIX,
    "itself": TARGET,
    "an unrelated request": UNRELATED,
}


@pytest.fixture(scope="module")
def model_present() -> None:
    need_model(MODEL)  # make test fetches it; under CI a missing model fails


def _answer(server: LocalServer, request: LLMRequest) -> tuple[str, list[tuple[str, float]]]:
    """The answer's text and its first token's top 5 log-probabilities, as the server gave them."""
    body = {
        "model": server.alias,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "max_tokens": 16,
        "temperature": 0.2,
        "seed": 0,
        "logprobs": True,
        "top_logprobs": 5,
    }
    post = urllib.request.Request(
        f"{server.api_base}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(post, timeout=300) as reply:
        data: Any = json.load(reply)
    choice = data["choices"][0]
    top = choice["logprobs"]["content"][0]["top_logprobs"]
    return choice["message"]["content"], [(t["token"], t["logprob"]) for t in top]


def _answers_after_each(mode: PromptCache) -> dict[str, tuple[str, list[tuple[str, float]]]]:
    out = {}
    with LocalServer.for_model(MODEL, prompt_cache=mode) as server:
        for label, before in BEFORE.items():
            if before is not None:
                _answer(server, before)
            out[label] = _answer(server, TARGET)
    return out


@pytest.fixture(scope="module")
def fresh_answers(model_present: None) -> dict[str, tuple[str, list[tuple[str, float]]]]:
    return _answers_after_each("fresh")


@pytest.mark.slow
def test_one_request_gets_one_answer_whatever_came_before(
    fresh_answers: dict[str, tuple[str, list[tuple[str, float]]]],
) -> None:
    """The fresh server: the same text and bit-identical log-probabilities after each."""
    seen = fresh_answers
    assert all(v == seen["nothing"] for v in seen.values()), seen
    assert "fårö" in seen["nothing"][0].lower()


@pytest.mark.slow
def test_the_aligned_server_gives_the_fresh_servers_answers(
    fresh_answers: dict[str, tuple[str, list[tuple[str, float]]]],
) -> None:
    """``aligned`` keeps the first 512-token chunk of the shared evidence (the prompts share
    about 600 tokens) and gives, after each request, the fresh server's text and numbers."""
    seen = _answers_after_each("aligned")
    assert seen == dict.fromkeys(BEFORE, fresh_answers["nothing"]), seen


@pytest.mark.slow
@pytest.mark.usefixtures("model_present")
def test_control_the_prefix_reusing_server_computes_other_logprobs_after_a_shared_prefix() -> None:
    """Shows the test above can fail: with prefix reuse, the same request's numbers move."""
    seen = _answers_after_each("reuse")
    assert seen["a request sharing its evidence"][1] != seen["nothing"][1], seen


@pytest.mark.slow
@pytest.mark.usefixtures("model_present")
def test_the_fresh_server_runs_the_installed_server_with_its_model_holder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hook of fresh_server is where this llama-cpp-python builds its model holder."""
    from llama_cpp.server import app as server_app
    from llama_cpp.server.settings import ModelSettings

    from chainrag.llm.fresh_server import FreshLlamaProxy

    monkeypatch.setattr(server_app, "LlamaProxy", FreshLlamaProxy)
    monkeypatch.setattr(server_app, "_llama_proxy", None)
    path: Path = models.check(models.get_model(MODEL), full=False).path
    server_app.set_llama_proxy([ModelSettings(model=str(path), n_ctx=512, verbose=False)])
    proxy = server_app._llama_proxy
    assert isinstance(proxy, FreshLlamaProxy)
    try:
        llama = proxy()
        llama.create_completion("Fårö is an island in the", max_tokens=2)
        assert llama.n_tokens > 0  # the evaluated prompt, which llama.cpp would reuse
        assert proxy() is llama and llama.n_tokens == 0
    finally:
        proxy.free()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize(
    ("shared", "prompt_end", "n_batch", "keep"),
    [(0, 0, 512, 0), (600, 700, 512, 512), (600, 500, 512, 0), (1100, 2000, 512, 1024),
     (2000, 1100, 512, 1024), (130, 1000, 64, 128), (128, 128, 64, 128)],
)  # fmt: skip
def test_aligned_keep_is_whole_chunks_of_the_previous_prompt(
    shared: int, prompt_end: int, n_batch: int, keep: int
) -> None:
    from chainrag.llm.fresh_server import aligned_keep

    assert aligned_keep(shared, prompt_end, n_batch) == keep


@pytest.mark.slow
@pytest.mark.usefixtures("model_present")
def test_aligned_evaluation_gives_the_fresh_logits_bit_for_bit() -> None:
    """In process, with 64-token chunks: a prompt evaluated after another that shares most of
    it — as ``Llama.generate`` would, from the shared prefix — through :class:`AlignedEval`
    has the logits of the same prompt evaluated from nothing, bit for bit, and re-evaluates
    only what follows the last whole shared chunk; evaluated from the shared prefix as
    llama.cpp does, its logits differ (so the comparison can fail)."""
    import llama_cpp
    import numpy as np

    from chainrag.llm.fresh_server import aligned_eval, forget

    path: Path = models.check(models.get_model(MODEL), full=False).path
    llama = llama_cpp.Llama(str(path), n_ctx=1024, n_batch=64, n_threads=2, seed=0,
                            verbose=False)  # fmt: skip
    try:
        first = llama.tokenize(f"Evidence:\n{EVIDENCE}\nQuestion: Where was he born?".encode())
        second = llama.tokenize(f"Evidence:\n{EVIDENCE}\nQuestion: Where did he die?".encode())
        shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
        assert shared > 200

        def logits() -> Any:
            vocab = llama.n_vocab()
            return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(vocab,)).copy()

        forget(llama)
        llama.eval(second)
        alone = logits()
        forget(llama)
        llama.eval(first)
        llama.n_tokens = shared  # llama.cpp's prefix reuse
        llama.eval(second[shared:])
        reused = logits()

        forget(llama)
        aligned = aligned_eval(llama)
        evaluated: list[int] = []
        inner = aligned.evaluate
        aligned.evaluate = lambda tokens: (evaluated.append(len(tokens)), inner(tokens))[1]
        aligned.new_request()
        llama.eval(first)
        aligned.new_request()
        llama.n_tokens = shared
        llama.eval(second[shared:])
        assert np.array_equal(logits(), alone)
        assert not np.array_equal(reused, alone)  # the control: what aligned avoids
        kept = shared - shared % 64
        assert evaluated == [len(first), len(second) - kept] and kept > 0
    finally:
        llama.close()


@pytest.mark.slow
@pytest.mark.usefixtures("model_present")
def test_a_larger_context_window_gives_a_prompt_the_same_logits() -> None:
    """The managed server's ``n_ctx`` (8,192 unless a recipe says otherwise) decides only which
    prompts are refused as too long: a prompt that fits 1,024 tokens has the same logits, bit
    for bit, in a window of 4,096 — which is why run folders and cached answers do not depend
    on it (chainrag.run.meta.answer_recipe)."""
    import llama_cpp
    import numpy as np

    from chainrag.llm.fresh_server import forget

    path: Path = models.check(models.get_model(MODEL), full=False).path
    seen = []
    for n_ctx in (1024, 4096):
        llama = llama_cpp.Llama(str(path), n_ctx=n_ctx, n_threads=2, seed=0, verbose=False)
        try:
            tokens = llama.tokenize(f"Evidence:\n{EVIDENCE}\nQuestion: Where was he born?".encode())
            assert 200 < len(tokens) < 1000
            forget(llama)
            llama.eval(tokens)
            vocab = llama.n_vocab()
            seen.append(np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(vocab,)).copy())
        finally:
            llama.close()
    assert np.array_equal(seen[0], seen[1])
