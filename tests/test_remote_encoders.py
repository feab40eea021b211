"""The remote embedder and reranker (``kind: litellm``) against the stand-in server: the same
vectors as ``hashed_bow``, each paid for once, within the provider's limits, paced and retried
by the LLM layer's machinery, checked before use."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from chainrag.components.index.embedders import HashedBagOfWords
from chainrag.components.index.remote_embedders import (
    InputsCut,
    LiteLLMEmbedder,
    request_batches,
    unit_rows,
)
from chainrag.components.retrieval.remote_rerankers import LiteLLMReranker
from chainrag.context import StageContext
from chainrag.core.context import EncoderLedger
from chainrag.core.errors import (
    LLMRateLimitError,
    LLMRequestError,
    LLMUnavailableError,
    RecipeError,
)
from chainrag.core.types import Hit
from chainrag.llm.encoders import check_encoder, encoder_identity, encoder_price
from chainrag.recipes.overrides import encoder_changes, encoder_section, load_changed, parse_all
from chainrag.run.provenance import recipe_digest
from chainrag.standin.process import Settings
from chainrag.standin.server import FakeOpenAI, fixed, serve
from chainrag.training.common import TrainingError
from chainrag.training.distill_fit import Pair
from chainrag.training.teachers import choose_teacher, teacher_scores

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["Paris is the capital of France.", "Berlin", "It opened in 1889.", "Berlin"]


def remote(api_base: str, **more: object) -> LiteLLMEmbedder:
    return LiteLLMEmbedder(model="openai/standin-embed", api_base=api_base, dimensions=64,
                           **more)  # type: ignore[arg-type]  # fmt: skip


def test_the_remote_vectors_are_the_local_hashed_bow_vectors_bit_for_bit() -> None:
    fake = FakeOpenAI([])
    with serve(fake) as base:
        got = remote(base)(TEXTS, StageContext())
    want = HashedBagOfWords(dim=64)(TEXTS, StageContext())
    assert got.dtype == np.float32 and got.shape == (4, 64)
    assert np.array_equal(got, want)
    assert [body["input"] for body in fake.embedded] == [TEXTS[:3]]  # each distinct text once


def test_a_rerun_a_second_recipe_or_a_query_met_before_makes_no_request() -> None:
    fake = FakeOpenAI([])
    with serve(fake) as base:
        first = remote(base)(TEXTS, StageContext())
        ledger = EncoderLedger()
        again = remote(base, concurrency=2)(TEXTS, StageContext(encoders=ledger))  # another run
        query = remote(base)(["Berlin"], StageContext(encoders=ledger), "query")
    assert len(fake.embedded) == 1
    assert np.array_equal(first, again) and np.array_equal(query[0], first[1])
    stages = dict(ledger.by_stage())
    assert stages["embed passages"].stored == 3 and stages["embed passages"].requests == 0
    assert stages["embed queries"].stored == 1


def test_two_endpoints_behind_one_model_name_never_share_vectors() -> None:
    one, other = FakeOpenAI([]), FakeOpenAI([])
    with serve(one) as first, serve(other) as second:
        remote(first)(TEXTS, StageContext())
        remote(second)(TEXTS, StageContext())
    assert len(one.embedded) == len(other.embedded) == 1
    assert encoder_identity("openai/x", "http://u:p@H:80/v1/") == "litellm:openai/x@http://h/v1"
    assert encoder_identity("openai/x", None, dimensions=64).endswith('+params:{"dimensions":64}')


def test_a_query_prefix_is_sent_for_queries_only_and_keys_what_is_sent() -> None:
    fake = FakeOpenAI([])
    with serve(fake) as base:
        e5 = remote(base, query_prefix="query: ", passage_prefix="passage: ")
        e5(["Paris"], StageContext(), "query")
        e5(["Paris"], StageContext(), "passage")
    assert [b["input"] for b in fake.embedded] == [["query: Paris"], ["passage: Paris"]]


def test_requests_stay_within_the_inputs_and_tokens_a_request() -> None:
    texts = ["a" * 10] * 5 + ["b" * 50]
    assert [len(b) for b in request_batches(texts, 2, 1000)] == [2, 2, 2]
    assert [len(b) for b in request_batches(texts, 10, 30)] == [3, 2, 1]
    assert [len(b) for b in request_batches(["x" * 99], 10, 30)] == [1]  # alone, never dropped
    cohere = LiteLLMEmbedder(model="cohere/embed-english-v3.0", batch_size=500)
    assert cohere._most() == 96  # Cohere's limit, whatever batch_size says
    assert cohere.input_type("query") == "search_query"
    assert cohere.input_type("passage") == "search_document"
    assert LiteLLMEmbedder(model="text-embedding-3-small").input_type("query") is None


def test_one_model_written_two_ways_is_one_embedder() -> None:
    bare = LiteLLMEmbedder(model="text-embedding-3-small")
    assert bare == LiteLLMEmbedder(model="openai/text-embedding-3-small")
    assert bare.vector_space("passage") == bare.vector_space("query")  # OpenAI has no roles


def test_several_requests_are_in_flight_at_once() -> None:
    fake = FakeOpenAI([], encoder_latency=fixed(0.3))
    texts = [f"sentence number {i}" for i in range(8)]
    with serve(fake) as base:
        started = time.perf_counter()
        remote(base, batch_size=1, concurrency=4)(texts, StageContext())
        took = time.perf_counter() - started
    assert len(fake.embedded) == 8
    assert took < 8 * 0.3 * 0.6  # two waves of four, not eight requests in turn


def test_the_standin_embeds_and_reranks_each_at_its_own_latency() -> None:
    both = FakeOpenAI([], latency=fixed(1.0), encoder_latency=fixed(0.2))
    own = FakeOpenAI([], latency=fixed(1.0), encoder_latency=fixed(0.2), rerank_latency=fixed(0.3))
    assert both.encoder_wait("embeddings") == both.encoder_wait("rerank") == 0.2
    assert (own.encoder_wait("embeddings"), own.encoder_wait("rerank")) == (0.2, 0.3)
    assert FakeOpenAI([], latency=fixed(1.0)).encoder_wait("rerank") == 1.0
    settings = Settings(latency="1", embed_latency="0.2", rerank_latency="fixed:0.3")
    assert "latency  1 s, embeddings 0.2 s, rerank fixed:0.3" in "\n".join(settings.lines("URL"))


def test_an_over_long_input_is_cut_counted_and_reported_once() -> None:
    fake = FakeOpenAI([])
    ledger = EncoderLedger()
    ctx = StageContext(encoders=ledger)
    long = " ".join(["word"] * 50)
    with serve(fake) as base, warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        embedder = remote(base, max_input_tokens=5)
        embedder([long, "short"], ctx)
        embedder([long + " more"], ctx)
    assert [w.category for w in said if issubclass(w.category, InputsCut)] == [InputsCut]
    assert fake.embedded[0]["input"][0] == "word word word word word"
    assert dict(ledger.by_stage())["embed passages"].cut == 2


def test_a_429_is_retried_after_its_retry_after_and_a_401_is_final() -> None:
    fake = FakeOpenAI([], rate=(1, 0.3))
    with serve(fake) as base:
        embedder = remote(base, batch_size=1, concurrency=2)
        embedder(["one", "two", "three"], StageContext())
    assert fake.rate_limited >= 1 and len(fake.embedded) == 3
    refused = FakeOpenAI([], key="right")  # refused before any answer: the run stops
    with serve(refused) as base, pytest.raises(LLMUnavailableError, match="refused its first"):
        remote(base)(["five"], StageContext())
    later = FakeOpenAI([], encoder_script=["ok", "401"])  # after an answer: one question's
    with serve(later) as base:
        ctx, embedder = StageContext(), remote(base, batch_size=1)
        embedder(["six"], ctx)
        with pytest.raises(LLMRequestError, match="401"):
            embedder(["seven"], ctx)
    scripted = FakeOpenAI([], encoder_script=["429"] * 3)
    with serve(scripted) as base, pytest.raises(LLMRateLimitError):
        remote(base, max_retries=2)(["four"], StageContext())  # (a new text: ports are reused)


def test_the_preflight_stops_on_a_refused_key_or_endpoint_and_passes_a_429() -> None:
    fake = FakeOpenAI([], key="right")
    with serve(fake) as base:
        with pytest.raises(LLMUnavailableError, match="did not embed one word"):
            check_encoder("openai/standin-embed", base, "embedding", call=True)
        with pytest.raises(LLMUnavailableError, match="did not rank one document"):
            check_encoder("cohere/standin-rerank", base, "rerank", call=True)
    with pytest.raises(LLMUnavailableError):
        check_encoder("openai/standin-embed", "http://127.0.0.1:9/v1", "embedding", call=True)
    with pytest.raises(LLMUnavailableError, match="litellm cannot send"):
        check_encoder("nonsense-provider/x", None, "embedding", call=False)
    busy = FakeOpenAI([], bursts=(60.0, 30.0))
    with serve(busy) as base:
        check_encoder("openai/standin-embed", base, "embedding", call=True)
    assert fake.embedded == [] and fake.probes == []  # the probe never got past the key


def test_the_reranker_scores_each_candidate_by_index_and_pays_once() -> None:
    fake = FakeOpenAI([])
    hits = (Hit(0, 0.9), Hit(1, 0.5), Hit(2, 0.1))
    texts = ["Berlin is big", "Paris is the capital of France", "France"]
    with serve(fake) as base:
        reranker = LiteLLMReranker(model="cohere/standin-rerank", api_base=base, batch_size=2)
        ledger = EncoderLedger()
        ranked = reranker("capital of France", hits, texts, StageContext(encoders=ledger))
        again = reranker("capital of France", hits, texts, StageContext(encoders=ledger))
    assert [h.index for h in ranked] == [1, 2, 0] and ranked == again
    assert len(fake.reranked) == 2  # three documents, two a request, once
    usage = dict(ledger.by_stage())["rerank"]
    assert (usage.searches, usage.sent, usage.stored) == (2, 3, 3)


def test_prices_come_from_litellms_map() -> None:
    embed = encoder_price("text-embedding-3-small")
    rerank = encoder_price("cohere/rerank-english-v3.0")
    assert embed is not None and embed.dollars(1_000_000, 0) == pytest.approx(0.02)
    assert rerank is not None and rerank.dollars(0, 1000) == pytest.approx(2.0)
    assert encoder_price("openai/no-such-model") is None


def test_unit_rows_keeps_a_unit_row_as_sent_and_scales_the_others() -> None:
    rows = np.asarray([[0.6, 0.8], [3.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    out = unit_rows(rows)
    assert np.array_equal(out[0], rows[0])
    assert np.allclose(out[1], [0.6, 0.8]) and np.array_equal(out[2], [0.0, 0.0])


def test_embedder_and_reranker_names_resolve_as_llm_names_do(tmp_path: Path) -> None:
    assert encoder_section("--embedder", str(tmp_path)) == {
        "kind": "flag_model",
        "model_path": str(tmp_path),
    }
    assert encoder_section("--reranker", str(tmp_path))["kind"] == "flag_reranker"
    assert encoder_section("--embedder", "hashed_bow") == {"kind": "hashed_bow"}
    assert encoder_section("--reranker", "cohere/rerank-english-v3.0") == {
        "kind": "litellm",
        "model": "cohere/rerank-english-v3.0",
    }
    with pytest.raises(RecipeError, match="--embedder nonsense-provider/x"):
        encoder_section("--embedder", "nonsense-provider/x")


def test_one_model_written_two_ways_is_one_recipe_digest() -> None:
    recipe = ROOT / "recipes" / "chainrag" / "ansint.yaml"
    digests = {
        recipe_digest(load_changed(recipe, parse_all(encoder_changes(name, "rerank-english-v3.0"))))
        for name in ("text-embedding-3-small", "openai/text-embedding-3-small")
    }
    assert len(digests) == 1
    shipped = recipe_digest(load_changed(recipe))
    assert shipped not in digests


def test_a_remote_reranker_is_a_distillation_teacher() -> None:
    pairs = [Pair(0, "capital of France", "Paris is the capital of France", True),
             Pair(0, "capital of France", "Berlin is big", False),
             Pair(1, "Berlin", "Berlin is big", True)]  # fmt: skip
    fake = FakeOpenAI([])
    with serve(fake) as base:
        teacher = choose_teacher("cohere/standin-rerank", None, None, base)
        scores, unreadable = teacher_scores(teacher, pairs)
    assert teacher.kind == "remote" and unreadable == 0
    assert scores.dtype == np.float32 and scores[0] > scores[1] and 0 <= scores.min() <= 1
    assert len(fake.reranked) == 2  # one search a question
    with pytest.raises(TrainingError, match="rerank model litellm knows"):
        choose_teacher("nonsense-provider/x", None, None)


def test_vectors_travel_as_base64_from_an_openai_api_and_equal_the_numbers() -> None:
    """``auto`` asks an OpenAI-style API for float32 bytes (litellm parses numbers into Python
    lists: ten times the CPU); ``float`` asks for numbers; the vectors are the same."""
    fake = FakeOpenAI([])
    texts = ["bytes travel light", "numbers travel too"]
    with serve(fake) as base:
        as_bytes = remote(base)(texts[:1], StageContext())
        as_numbers = remote(base, encoding_format="float")(texts[1:], StageContext())
        remote(base).check_endpoint(call=True)
    assert [b.get("encoding_format") for b in fake.embedded] == ["base64", "float"]
    assert fake.probes[-1]["encoding_format"] == "base64"  # the check asks as the run will
    want = HashedBagOfWords(dim=64)(texts, StageContext())
    assert np.array_equal(np.concatenate([as_bytes, as_numbers]), want)
    assert remote(base)._wire() == "base64"
    assert LiteLLMEmbedder(model="cohere/embed-english-v3.0")._wire() is None  # its own API
    assert LiteLLMEmbedder(model="text-embedding-3-small")._wire() == "base64"


def test_a_server_that_refuses_the_encoding_is_told_to_take_float() -> None:
    fake = FakeOpenAI([], numbers_only=True)
    with serve(fake) as base:
        with pytest.raises(LLMUnavailableError, match="encoding_format=float"):
            remote(base).check_endpoint(call=True)
        remote(base, encoding_format="float").check_endpoint(call=True)
        vectors = remote(base, encoding_format="float")(["only numbers here"], StageContext())
    assert vectors.shape == (1, 64) and fake.probes[-1]["encoding_format"] == "float"
