from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest

from chainrag.core.errors import RecipeError
from chainrag.core.types import LLMRequest, LLMResponse, Message, Usage
from chainrag.llm import endpoint_identity, managed_prompt_cache, open_llm
from chainrag.llm.cache import CachedLLM, ResponseCache, request_key
from chainrag.llm.fake import FakeLLMError, ScriptedLLM
from chainrag.llm.prompts import PromptError, available, load_prompt
from chainrag.llm.server import LocalServer, PromptCache, server_command
from chainrag.llm.stack import BoundLLM, Ledger, MeteredLLM
from chainrag.recipes.models import DEFAULT_N_CTX, get_model
from chainrag.recipes.recipe import LLMSpec

from .test_server import standin


def req(text: str = "hi", prompt_id: str = "p", model: str = "m") -> LLMRequest:
    return LLMRequest((Message("user", text),), prompt_id, model=model, temperature=0.0)


# --------------------------------------------------------------------------- fake LLM


def test_scripted_llm_replies_in_order_then_refuses() -> None:
    fake = ScriptedLLM({"p": ["one", lambda r: r.messages[0].content.upper()]})
    assert fake.complete(req("x")).text == "one"
    assert fake.complete(req("x")).text == "X"
    with pytest.raises(FakeLLMError, match=r"script for 'p' has 2 replies; asked for #3"):
        fake.complete(req())
    with pytest.raises(FakeLLMError, match=r"no script for prompt 'q'; scripted: \['p'\]"):
        fake.complete(req(prompt_id="q"))


# --------------------------------------------------------------------------- cache


def test_cache_key_covers_the_whole_request() -> None:
    base = req()
    variants = [
        attrs.evolve(base, model="other"),
        attrs.evolve(base, temperature=0.2),
        attrs.evolve(base, max_tokens=5),
        attrs.evolve(base, seed=1),
        attrs.evolve(base, prompt_version=2),
        attrs.evolve(base, json_schema="{}"),
        attrs.evolve(base, messages=(Message("system", "hi"),)),
        attrs.evolve(base, top_logprobs=5),
    ]
    keys = {request_key(r) for r in [base, *variants]}
    assert len(keys) == len(variants) + 1
    assert request_key(base) == request_key(req())


def test_cache_keys_made_before_top_logprobs_existed_still_hold() -> None:
    """The keys of requests without log-probabilities are those of 95bf185, before the field
    came, so the responses cached by every earlier run are still served."""
    assert request_key(req()) == (
        "5a1410d0297590de4cab25b55db37bca4ad782e9edd328b21ecec3dc20294726"
    )
    assert request_key(req(), "gguf:abc") == (
        "2fad1b50f67022a27e83af241c7f342f6af0f2d2ebae3f69c12dcab18360fc47"
    )


def test_a_cached_response_keeps_its_log_probabilities(tmp_path: Path) -> None:
    asked = attrs.evolve(req(), top_logprobs=2)
    top = (("A", -0.1), ("B", -2.4))
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put(asked, LLMResponse("A", "m", Usage(1, 0, 3, 1), top_logprobs=top))
    cache.put(req(), LLMResponse("A", "m", Usage(1, 0, 3, 1)))
    assert ResponseCache(tmp_path / "c.sqlite").get(asked) == LLMResponse(
        "A", "m", Usage(cache_hits=1), cached=True, top_logprobs=top
    )
    assert cache.get(req()) == LLMResponse("A", "m", Usage(cache_hits=1), cached=True)
    scripted = ScriptedLLM({"p": [LLMResponse("B", "", top_logprobs=top)]})
    assert scripted.complete(asked).top_logprobs == top


def test_cache_modes(tmp_path: Path) -> None:
    fake = ScriptedLLM({"p": lambda r: f"answer {len(fake.requests)}"})
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = CachedLLM(fake, cache).complete(req())
    hit = CachedLLM(fake, cache).complete(req())
    assert (first.text, first.cached, hit.text, hit.cached) == ("answer 1", False, "answer 1", True)
    assert hit.usage == Usage(cache_hits=1)  # a hit is not a call and costs no tokens
    assert CachedLLM(fake, cache, "bypass").complete(req()).text == "answer 2"
    assert CachedLLM(fake, cache).complete(req()).text == "answer 1"  # bypass wrote nothing
    assert CachedLLM(fake, cache, "refresh").complete(req()).text == "answer 3"
    assert CachedLLM(fake, cache).complete(req()).text == "answer 3"
    assert fake.calls() == 3


def test_cache_survives_reopen_and_stores_json(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put(req(), LLMResponse("stored", "m", Usage(1, 0, 3, 4)))
    again = ResponseCache(path)
    assert again.get(req()) == LLMResponse("stored", "m", Usage(cache_hits=1), cached=True)
    raw = again._connect().execute("SELECT value FROM responses").fetchone()[0]
    assert raw.startswith("{") and '"text": "stored"' in raw


def _writer(path: str, worker: int, n: int) -> None:
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(req(f"{worker}-{i}"), LLMResponse(f"v{worker}-{i}", "m"))
        cache.put(req("shared"), LLMResponse("same", "m"))
        assert cache.get(req(f"{worker}-{i}")) is not None


def test_cache_is_safe_under_concurrent_writers(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = ResponseCache(path)
    assert len(cache) == 4 * 150 + 1
    got = cache.get(req("3-149"))
    assert got is not None and got.text == "v3-149"


def _rollback_file_under_a_write_lock(path: Path) -> sqlite3.Connection:
    """A file in the default (rollback) journal mode, another connection holding its write lock."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_a_new_cache_waits_out_a_write_lock_to_switch_to_wal(tmp_path: Path) -> None:
    # SQLite fails PRAGMA journal_mode=WAL at once, without its busy handler, while another
    # connection holds the write lock: the open must wait, as every other statement does.
    path = tmp_path / "c.sqlite"
    holder = _rollback_file_under_a_write_lock(path)
    threading.Timer(0.3, holder.execute, ("COMMIT",)).start()
    cache = ResponseCache(path, busy_timeout_s=30)
    assert cache._connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.put(req(), LLMResponse("stored", "m"))
    assert ResponseCache(path).get(req()) is not None


def test_a_cache_locked_past_its_timeout_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    holder = _rollback_file_under_a_write_lock(path)
    with pytest.raises(sqlite3.OperationalError, match=r"c\.sqlite: still locked .* WAL mode"):
        ResponseCache(path, busy_timeout_s=0.2)
    holder.execute("COMMIT")


# --------------------------------------------------------------------------- binding, metering


def test_bound_llm_fills_only_unset_fields() -> None:
    fake = ScriptedLLM({"p": ["a", "b"]})
    bound = BoundLLM(fake, "openai/x", 0.2, 512, 7)
    bound.complete(LLMRequest((Message("user", "q"),), "p"))
    bound.complete(LLMRequest((Message("user", "q"),), "p", max_tokens=8, temperature=0.0))
    first, second = fake.requests
    assert (first.model, first.temperature, first.max_tokens, first.seed) == (
        "openai/x",
        0.2,
        512,
        7,
    )
    assert (second.temperature, second.max_tokens) == (0.0, 8)


def test_metered_llm_counts_calls_hits_and_tokens_per_prompt(tmp_path: Path) -> None:
    fake = ScriptedLLM({"a": lambda r: "one two", "b": ["x"]})
    shared = CachedLLM(fake, ResponseCache(tmp_path / "c.sqlite"))
    ledger = Ledger()
    llm = MeteredLLM(shared, ledger)
    llm.complete(req("q", "a"))
    llm.complete(req("q", "a"))  # cache hit
    llm.complete(req("q", "b"))
    by = ledger.by_prompt()
    assert by["a"] == Usage(calls=1, cache_hits=1, prompt_tokens=1, completion_tokens=2)
    assert by["b"].calls == 1
    assert ledger.total().calls == 2
    assert ledger.total().cache_hits == 1


def test_usage_adds_cost_only_when_known() -> None:
    assert (Usage(cost_usd=None) + Usage(cost_usd=None)).cost_usd is None
    assert (Usage(cost_usd=0.5) + Usage(cost_usd=None)).cost_usd == 0.5


def test_usage_subtracts_an_earlier_reading() -> None:
    before = Usage(2, 1, 10, 4, 0.5, None)
    after = before + Usage(1, 2, 7, 3, 0.25, 0.125)
    assert after - before == Usage(1, 2, 7, 3, 0.25, 0.125)
    assert (after - before) + before == after
    assert (Usage(cost_usd=None) - Usage(cost_usd=0.5)).cost_usd is None
    assert (Usage(cost_usd=0.75) - Usage(cost_usd=0.5)).cost_usd == 0.25


# --------------------------------------------------------------------------- prompts


def test_prompts_are_versioned_files() -> None:
    assert available()["answer_short"] == [1]
    prompt = load_prompt("answer_short")
    assert (prompt.id, prompt.version, prompt.max_tokens) == ("answer_short", 1, 32)
    request = prompt.request(context="Paris is in France.", question="Where is Paris?")
    assert [m.role for m in request.messages] == ["system", "user"]
    assert "Paris is in France." in request.messages[1].content
    assert request.prompt_id == "answer_short" and request.model == ""


def test_sub_answer_prompt_starts_as_the_sufficiency_check() -> None:
    """answer_sub@v2 repeats sufficiency@v2 up to the question, so that a server's prompt cache
    (llama.cpp keeps the previous request's prefix) reads the evidence once for both."""
    values = {"evidence": "[1] Ingmar Bergman died on Fårö.\n[2] He directed films.",
              "question": "Where did Ingmar Bergman die?"}  # fmt: skip
    check = load_prompt("sufficiency", 2).render(**values)
    answer = load_prompt("answer_sub", 2).render(**values)
    assert check[0] == answer[0] and check[0].role == "system"
    shared = os.path.commonprefix([check[1].content, answer[1].content])  # noqa: RUF071 (text)
    assert shared.endswith("Question: Where did Ingmar Bergman die?\n")
    assert "Ingmar Bergman died on Fårö." in shared
    # the earlier versions do not share it: their system texts differ
    assert load_prompt("sufficiency", 1).system != load_prompt("answer_sub", 1).system


def test_prompt_shots_are_earlier_chat_turns() -> None:
    prompt = load_prompt("helps", 2)
    messages = prompt.render(question="Where is Paris?", knowledge="Paris is in France.")
    roles = [m.role for m in messages]
    assert roles == ["system", *["user", "assistant"] * len(prompt.shots), "user"]
    assert [m.content for m in messages[2:-1:2]] == ["yes", "no", "yes", "no"]
    assert messages[-1].content.startswith("Question: Where is Paris?\nKnowledge: Paris is")
    assert not load_prompt("helps", 1).shots  # v1 has its examples inline


@pytest.mark.parametrize(
    "shots",
    ["just text", [{"user": "q"}], [{"user": "q", "assistant": 3}],
     [{"user": "q", "assistant": "a", "system": "s"}]],
)  # fmt: skip
def test_malformed_prompt_shots_are_named(shots: object) -> None:
    from chainrag.llm.prompts import _build

    with pytest.raises(PromptError, match=r"x@v1.yaml: 'shots' must be a list of"):
        _build("x", 1, {"user": "$question", "shots": shots}, "x@v1.yaml")


def test_prompt_schema_is_canonical_json() -> None:
    schema = load_prompt("answer_short_json").json_schema
    assert schema is not None and schema.startswith('{"additionalProperties": false')


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: load_prompt("nope"), r"no prompt 'nope'; available: ansint, answer_short"),
        (lambda: load_prompt("answer_short", 9), r"has versions \[1\], not 9"),
        (lambda: load_prompt("answer_short").render(question="q"),
         r"missing \['context'\], unknown nothing"),
        (lambda: load_prompt("answer_short").render(context="c", question="q", x="y"),
         r"missing nothing, unknown \['x'\]"),
    ],
)  # fmt: skip
def test_prompt_errors(call: object, message: str) -> None:
    with pytest.raises(PromptError, match=message):
        call()  # type: ignore[operator]


def test_open_llm_for_an_api_model_needs_no_server(tmp_path: Path) -> None:
    spec = LLMSpec(kind="litellm", model="openai/gpt-4o-mini", temperature=0.3)
    with open_llm(spec, cache_path=tmp_path / "c.sqlite") as llm:
        assert isinstance(llm, BoundLLM)
        assert (llm.model, llm.temperature) == ("openai/gpt-4o-mini", 0.3)
        assert isinstance(llm.inner, CachedLLM)


# --------------------------------------------------------------------------- prompt cache mode


def test_the_managed_server_keeps_aligned_chunks_unless_told_otherwise() -> None:
    assert LLMSpec().prompt_cache is None
    assert managed_prompt_cache(LLMSpec()) == "aligned"
    assert managed_prompt_cache(LLMSpec(prompt_cache="fresh")) == "fresh"
    assert managed_prompt_cache(LLMSpec(kind="litellm", model="openai/gpt-4o-mini",
                                        prompt_cache="fresh")) is None  # fmt: skip
    assert managed_prompt_cache(LLMSpec(prompt_cache="reuse")) == "reuse"
    assert managed_prompt_cache(LLMSpec(api_base="http://127.0.0.1:8000/v1")) is None
    assert managed_prompt_cache(LLMSpec(kind="litellm", model="openai/gpt-4o-mini")) is None
    fresh = server_command(Path("/m.gguf"), "qwen", 8123, 4096, 2)
    assert fresh[1:3] == ["-m", "chainrag.llm.fresh_server"]
    reuse = server_command(Path("/m.gguf"), "qwen", 8123, 4096, 2, "reuse")
    assert reuse[1:3] == ["-m", "llama_cpp.server"] and reuse[3:] == fresh[3:]
    assert managed_prompt_cache(LLMSpec(prompt_cache="aligned")) == "aligned"
    aligned = server_command(Path("/m.gguf"), "qwen", 8123, 4096, 2, "aligned")
    assert aligned[1:4] == ["-m", "chainrag.llm.fresh_server", "--aligned"]
    assert aligned[4:] == fresh[3:]


@pytest.mark.parametrize(
    "spec",
    [
        LLMSpec(kind="litellm", model="openai/gpt-4o-mini", prompt_cache="reuse"),
        LLMSpec(api_base="http://127.0.0.1:8000/v1", prompt_cache="reuse"),
        LLMSpec(api_base="http://127.0.0.1:8000/v1", prompt_cache="aligned"),
    ],
)
def test_reuse_is_refused_where_chainrag_does_not_start_the_server(spec: LLMSpec) -> None:
    with (
        pytest.raises(
            RecipeError, match=rf"{spec.prompt_cache} applies only to the managed local server"
        ),
        open_llm(spec),
    ):
        pass


def test_the_managed_server_gets_the_recipes_context_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """n_ctx reaches the managed server (8,192 unset: the paper's 3,000-word budget does not
    fit 4,096 tokens); elsewhere it is an error that names it; below 512 it is refused."""
    seen: list[object] = []

    def for_model(name: str, **kwargs: Any) -> LocalServer:
        seen.append(kwargs["n_ctx"])
        return LocalServer(get_model(name), tmp_path / "m.gguf", log_dir=tmp_path,
                           command=standin("ok"), **kwargs)  # fmt: skip

    monkeypatch.setattr(LocalServer, "for_model", staticmethod(for_model))
    for spec in (LLMSpec(model="qwen2.5-coder-0.5b"), LLMSpec(model="qwen2.5-coder-0.5b",
                                                              n_ctx=16384)):  # fmt: skip
        with open_llm(spec):
            pass
    assert seen == [DEFAULT_N_CTX, 16384] and DEFAULT_N_CTX == 8192
    assert server_command(Path("/m.gguf"), "qwen", 8123, 16384, 2)[-4:-2] == ["--n_ctx", "16384"]
    with pytest.raises(RecipeError, match=r"local server .*: remove n_ctx @ llm\.n_ctx"):
        managed_prompt_cache(LLMSpec(api_base="http://127.0.0.1:8000/v1", n_ctx=16384))
    with pytest.raises(ValueError, match="n_ctx"):
        LLMSpec(n_ctx=100)


def test_answers_cached_in_one_mode_are_not_served_in_the_other() -> None:
    fresh = endpoint_identity(LLMSpec(prompt_cache="fresh"))
    reuse = endpoint_identity(LLMSpec(prompt_cache="reuse"))
    # reuse keeps the identity answers were cached under before the mode existed (all by reuse)
    assert reuse == f"gguf:sha256:{get_model('qwen2.5-coder-1.5b').sha256}"
    assert fresh == reuse + "+prompt_cache:fresh"
    # aligned gives fresh's answers bit for bit (tests/test_determinism.py), so it shares them
    assert endpoint_identity(LLMSpec(prompt_cache="aligned")) == fresh
    assert endpoint_identity(LLMSpec()) == fresh  # unset: aligned
    assert request_key(req(), fresh) != request_key(req(), reuse)
    remote = LLMSpec(kind="litellm", model="openai/gpt-4o-mini")
    assert endpoint_identity(remote) == "litellm:openai/gpt-4o-mini@provider-default"


@pytest.mark.parametrize("mode", ["fresh", "aligned", "reuse"])
def test_open_llm_starts_the_managed_server_in_the_recipes_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: PromptCache
) -> None:
    started: list[LocalServer] = []

    def for_model(name: str, **kwargs: Any) -> LocalServer:
        model = get_model(name)
        server = LocalServer(model, tmp_path / "m.gguf", log_dir=tmp_path, command=standin("ok"),
                             **kwargs)  # fmt: skip
        started.append(server)
        return server

    monkeypatch.setattr(LocalServer, "for_model", staticmethod(for_model))
    with open_llm(LLMSpec(model="qwen2.5-coder-0.5b", prompt_cache=mode)) as llm:
        assert isinstance(llm, BoundLLM) and started[0].answers()
    assert [s.prompt_cache for s in started] == [mode]
    assert started[0].process is None  # stopped with the block


def test_a_cached_answer_never_waits_for_the_slot_a_live_request_holds(tmp_path: Path) -> None:
    """open_llm's one LLM slot sits between the response cache and the backend: while a live
    request holds it (the fake server answers after 3 s), an answer in the cache is returned,
    and the live request is still in flight when it is."""
    import threading

    from chainrag.core.types import LLMRequest, Message
    from chainrag.llm import open_llm
    from chainrag.recipes.recipe import LLMSpec
    from chainrag.standin.server import FakeOpenAI, serve

    def ask(text: str) -> LLMRequest:
        return LLMRequest((Message("user", text),), "p", max_tokens=4)

    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        spec = LLMSpec(kind="litellm", model="openai/fake", api_base=api_base, max_retries=0)
        cache = tmp_path / "cache.sqlite"
        with open_llm(spec, cache_path=cache, slots=1) as llm:
            llm.complete(ask("cached"))  # now in the cache
            fake.delay_s = 3.0
            live = threading.Thread(target=llm.complete, args=(ask("live"),))
            live.start()
            while len(fake.bodies) < 2:  # the live request reached the server: slot taken
                threading.Event().wait(0.01)
            answer = llm.complete(ask("cached"))
            in_flight = live.is_alive()
            live.join()
    assert answer.cached and answer.text == "Paris"
    assert in_flight, "the cached answer waited for the live request's slot"
