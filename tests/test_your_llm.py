"""The researcher's own model: any litellm model on the command line (``--llm``, ``--api-base``),
what can be checked before paying checked before the first question (credentials, the endpoint),
and a provider's limits paced rather than discovered by 429s. Every endpoint here is the stand-in
OpenAI-compatible server on 127.0.0.1 (chainrag/standin/server.py); nothing reaches a network."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.errors import LLMRateLimitError, LLMUnavailableError, RecipeError
from chainrag.core.types import LLMRequest, Message, Usage
from chainrag.llm import open_llm
from chainrag.llm.backend import LiteLLMBackend, RetryPolicy
from chainrag.llm.pacing import Limits, Pacer, request_tokens
from chainrag.llm.preflight import CheckedLLM
from chainrag.recipes.overrides import LITELLM_DEFAULTS, llm_section, load_changed
from chainrag.recipes.recipe import LLMSpec
from chainrag.run.meta import recipe_digest
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT

ANSINT = ROOT / "recipes" / "chainrag" / "ansint.yaml"


# --------------------------------------------------------------------------- --llm


def test_llm_takes_an_overlay_a_local_model_or_any_litellm_model_string() -> None:
    assert llm_section("gpt-4o-mini")["model"] == "openai/gpt-4o-mini"
    assert llm_section("qwen2.5-coder-1.5b") == {
        "kind": "local_gguf",
        "model": "qwen2.5-coder-1.5b",
    }
    assert llm_section("anthropic/claude-3-5-haiku-20241022") == {
        **LITELLM_DEFAULTS, "model": "anthropic/claude-3-5-haiku-20241022"}  # fmt: skip
    assert llm_section("ollama/qwen2.5:7b")["kind"] == "litellm"
    assert llm_section("zai/glm-4-plus") == llm_section("glm-4-plus")  # the overlay's api_base
    own = ROOT / "recipes" / "llms" / "qwen-plus.yaml"
    assert llm_section(str(own)) == llm_section("qwen-plus")


def test_an_overlay_and_its_model_string_are_one_recipe() -> None:
    by_overlay = load_changed(ANSINT, llm="gpt-4o-mini")
    by_string = load_changed(ANSINT, llm="openai/gpt-4o-mini")
    assert recipe_digest(by_overlay) == recipe_digest(by_string)
    # and the default local model by its name is the recipe as shipped
    assert recipe_digest(load_changed(ANSINT, llm="qwen2.5-coder-1.5b")) == recipe_digest(
        load_changed(ANSINT)
    )


def test_recipe_show_and_the_dry_run_print_the_digest(tmp_path: Path, own_cache: Path) -> None:
    """Whether ``gpt-4o-mini`` and ``openai/gpt-4o-mini`` make one recipe is read off the
    command line: both print the digest a run folder resumes by."""
    runner = CliRunner()
    shown = {name: runner.invoke(app, ["recipe", "show", str(ANSINT), "--llm", name])
             for name in ("gpt-4o-mini", "openai/gpt-4o-mini")}  # fmt: skip
    digest = recipe_digest(load_changed(ANSINT, llm="gpt-4o-mini"))
    for result in shown.values():
        assert result.exit_code == 0, result.output
        assert result.output.splitlines()[-1].startswith(f"# digest: {digest} (a run folder")
    plan = runner.invoke(app, [*run_args(tmp_path, "--llm", "gpt-4o-mini"), "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert (
        f"  recipe digest: {recipe_digest(load_changed(naive(tmp_path), llm='gpt-4o-mini'))}"
        in (plan.output.splitlines())
    )


@pytest.mark.parametrize("name", ["nonsense/xyz", "gpt4o"])
def test_an_unknown_model_is_refused_naming_what_was_tried(name: str) -> None:
    with pytest.raises(RecipeError, match=r"LLM overlay \(glm-4-plus.*local model") as caught:
        llm_section(name)
    assert f"model={name} @ --llm {name}" in str(caught.value)  # litellm's words, then where
    with pytest.raises(RecipeError, match="no such recipe file"):
        llm_section("missing-llm.yaml")


def test_api_base_sets_the_llm_server(tmp_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["recipe", "show", str(ANSINT), "--llm", "hosted_vllm/my-model",
                                "--api-base", "http://127.0.0.1:8000/v1"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "model: hosted_vllm/my-model\n  api_base: http://127.0.0.1:8000/v1\n" in shown.output
    for bad, why in [
        ("127.0.0.1:8000", "expected an http"),
        ("http://u:secret@h/v1", "credentials"),
    ]:
        refused = runner.invoke(app, ["recipe", "show", str(ANSINT), "--api-base", bad])
        assert refused.exit_code == 2 and why in refused.output
        assert "secret" not in refused.output


# --------------------------------------------------------------------------- checked before the run


def naive(tmp_path: Path) -> Path:
    """NaiveRAG with a hashed embedder (no model to load), its LLM given on the command line."""
    path = tmp_path / "naive.yaml"
    path.write_text(f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\nname: naive\n"
                    "index: {embedder: {kind: hashed_bow, dim: 64}}\n")  # fmt: skip
    return path


def run_args(tmp_path: Path, *llm: str, limit: int = 3) -> list[str]:
    return ["run", str(naive(tmp_path)), "--dataset", "musique", "--limit", str(limit),
            "--out-dir", str(tmp_path / "runs"), "--no-report", *llm]  # fmt: skip


def nothing_recorded(tmp_path: Path) -> bool:
    folder = tmp_path / "runs" / "musique" / "naive"
    return not (folder / "errors.jsonl").exists() and not (folder / "predictions.jsonl").exists()


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A response cache of this test's own, so that what it holds is known."""
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_missing_key_stops_the_run_before_any_question(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, run_args(tmp_path, "--llm", "openai/gpt-4o-mini"))
    assert result.exit_code == 1
    assert "openai/gpt-4o-mini needs OPENAI_API_KEY" in result.output
    assert nothing_recorded(tmp_path)
    for plan_only in (["--dry-run"], ["--estimate"]):  # a warning there, naming the variable
        said = runner.invoke(app, run_args(tmp_path, "--llm", "openai/gpt-4o-mini", *plan_only))
        assert "warning: openai/gpt-4o-mini needs OPENAI_API_KEY" in said.output, said.output
        assert "Traceback" not in said.output


def test_a_refused_connection_stops_the_run_at_once(tmp_path: Path, own_cache: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = CliRunner().invoke(app, run_args(
        tmp_path, "--llm", "openai/m", "--api-base", f"http://127.0.0.1:{port}/v1"))  # fmt: skip
    assert result.exit_code == 1
    assert "openai/m did not answer a one-token request" in result.output
    assert f"http://127.0.0.1:{port}/v1/chat/completions: connection refused" in result.output
    assert nothing_recorded(tmp_path)


def test_a_refused_key_stops_the_run_with_the_providers_message(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    fake = FakeOpenAI([], key="sk-right")
    with serve(fake) as api_base:
        result = CliRunner().invoke(app, run_args(tmp_path, "--llm", "openai/m",
                                                  "--api-base", api_base))  # fmt: skip
    assert result.exit_code == 1
    assert "Incorrect API key provided" in result.output
    assert "sk-wrong" not in result.output
    assert nothing_recorded(tmp_path) and fake.bodies == []


def test_a_run_the_cache_answers_needs_no_key_and_no_endpoint(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-right")
    fake = FakeOpenAI([], key="sk-right", reply="Paris")
    runner = CliRunner()
    with serve(fake) as api_base:
        args = run_args(tmp_path, "--llm", "openai/m", "--api-base", api_base)
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        assert len(fake.probes) == 1 and len(fake.bodies) == 3  # one probe, not counted
    lines = (tmp_path / "runs" / "musique" / "naive" / "predictions.jsonl").read_text()
    usage = [json.loads(line)["usage"] for line in lines.splitlines()]
    assert [u["calls"] for u in usage] == [1, 1, 1]  # the probe is in no question's usage
    (tmp_path / "runs" / "musique" / "naive").rename(tmp_path / "first")
    monkeypatch.delenv("OPENAI_API_KEY")  # the server is gone too
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "3 answered" in again.output


def test_answers_cached_from_another_address_do_not_put_the_check_off(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache holds answers of ``openai/m`` from one server; the same model name at another
    address (which refuses the key) is checked before the first question, and a refusal
    records nothing: the cache holds no answer of that endpoint, whatever its model's name."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-right")
    first, other = FakeOpenAI([], key="sk-right", reply="Paris"), FakeOpenAI([], key="sk-other")
    runner = CliRunner()
    with serve(first) as first_base, serve(other) as other_base:
        done = runner.invoke(app, run_args(tmp_path, "--llm", "openai/m", "--api-base", first_base))
        assert done.exit_code == 0, done.output
        args = run_args(tmp_path, "--llm", "openai/m", "--api-base", other_base)
        args[args.index("--out-dir") + 1] = str(tmp_path / "elsewhere")
        refused = runner.invoke(app, args)
    assert refused.exit_code == 1 and "Incorrect API key provided" in refused.output
    assert not (tmp_path / "elsewhere").exists() and other.bodies == []
    assert len(other.probes) == 0  # the 401 came before the probe's body was kept


def test_a_check_put_off_that_fails_at_the_first_live_request_records_nothing(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache holds answers of this very endpoint (MuSiQue's), so the check waits for the
    first live request; HotpotQA's questions need one, the key is now refused, and the run
    stops there with no folder left behind (it had answered nothing)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-right")
    fake = FakeOpenAI([], key="sk-right", reply="Paris")
    runner = CliRunner()
    with serve(fake) as api_base:
        done = runner.invoke(app, run_args(tmp_path, "--llm", "openai/m", "--api-base", api_base))
        assert done.exit_code == 0, done.output
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        args = run_args(tmp_path, "--llm", "openai/m", "--api-base", api_base)
        args[args.index("musique")] = "hotpotqa"
        refused = runner.invoke(app, args)
    assert refused.exit_code == 1 and "Incorrect API key provided" in refused.output
    assert not (tmp_path / "runs" / "hotpotqa").exists()
    assert (tmp_path / "runs" / "musique" / "naive" / "predictions.jsonl").is_file()


def test_the_cache_knows_the_endpoints_it_holds_answers_of(tmp_path: Path) -> None:
    from chainrag.core.types import LLMResponse
    from chainrag.llm import endpoint_identity
    from chainrag.llm.cache import ResponseCache

    at = {port: LLMSpec(kind="litellm", model="openai/m", api_base=f"http://127.0.0.1:{port}/v1")
          for port in (8000, 8001)}  # fmt: skip
    cache = ResponseCache(tmp_path / "c.sqlite")
    request = LLMRequest((Message("user", "hi"),), prompt_id="p", model="openai/m")
    cache.put(request, LLMResponse("Paris", "openai/m"), endpoint_identity(at[8000]))
    assert cache.holds_endpoint(endpoint_identity(at[8000]))
    assert not cache.holds_endpoint(endpoint_identity(at[8001]))  # one model name, two servers
    cache.close()
    assert ResponseCache(tmp_path / "c.sqlite").holds_endpoint(endpoint_identity(at[8000]))


def test_the_check_waits_for_the_first_live_request_and_stops_the_run_there() -> None:
    """Where the cache may answer everything, the checks run before the first live request;
    a failure stops the run (every later request refused too) and the inner LLM is not asked."""
    asked: list[str] = []

    class Inner:
        def complete(self, request: LLMRequest) -> object:
            asked.append(request.prompt_id)
            raise AssertionError("never reached")

    def check(model: str) -> None:
        raise LLMUnavailableError(f"{model} needs OPENAI_API_KEY")

    gate = CheckedLLM(Inner(), check)  # type: ignore[arg-type]
    request = LLMRequest((Message("user", "hi"),), prompt_id="cxtint", model="openai/m")
    for _ in range(2):
        with pytest.raises(LLMUnavailableError, match="needs OPENAI_API_KEY") as caught:
            gate.complete(request)
        assert caught.value.stops_run
    assert asked == []


# --------------------------------------------------------------------------- rate limits


class Clock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0
        self.lock = threading.Lock()

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


def test_requests_a_minute_start_evenly_spaced() -> None:
    clock = Clock()
    pacer = Pacer(Limits(requests_per_minute=120), clock=clock.time, sleep=clock.sleep)
    starts = []
    for _ in range(5):
        with pacer.turn(10):
            starts.append(clock.now)
    assert starts == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0])


def test_tokens_a_minute_allow_a_minutes_worth_then_pace_and_settle_by_use() -> None:
    clock = Clock()
    pacer = Pacer(Limits(tokens_per_minute=600), clock=clock.time, sleep=clock.sleep)
    with pacer.turn(600):  # a minute's worth at once
        assert clock.now == 0.0
    pacer.settle(600, Usage(calls=1, prompt_tokens=100, completion_tokens=20))  # 480 unused back
    with pacer.turn(500):  # 480 held: 20 more tokens at 10 a second
        assert clock.now == pytest.approx(2.0)


def test_a_429s_retry_after_holds_every_request() -> None:
    clock = Clock()
    pacer = Pacer(Limits(), clock=clock.time, sleep=clock.sleep)
    pacer.hold(3.0)
    with pacer.turn(1):
        assert clock.now == pytest.approx(3.0)


def test_request_tokens_count_the_text_and_the_completion_limit() -> None:
    request = LLMRequest((Message("user", "x" * 400),), prompt_id="p", max_tokens=50)
    assert request_tokens(request) == 150


def test_retry_after_is_read_from_the_429_and_waited_for() -> None:
    fake = FakeOpenAI([], rate=(1, 0.6))
    slept: list[float] = []
    with serve(fake) as api_base:
        backend = LiteLLMBackend(api_base=api_base, api_key="k", retry=RetryPolicy(3),
                                 sleep=slept.append)  # fmt: skip
        request = LLMRequest((Message("user", "hi"),), prompt_id="p", model="openai/m")
        backend.complete(request)
        with pytest.raises(LLMRateLimitError) as caught:  # sleeps are recorded, not slept
            backend.complete(request)
    assert caught.value.retry_after_s is not None and 0 < caught.value.retry_after_s <= 0.6
    assert len(slept) == 3 and all(0 < s <= 0.6 for s in slept)  # Retry-After, not 1-8 s


def test_a_paced_run_meets_the_rate_instead_of_hitting_it() -> None:
    """24 requests from 8 threads at once against a server that refuses a 6th request within
    a second: paced at 240 a minute (4 a second), none is refused and all are answered."""
    fake = FakeOpenAI([], rate=(5, 1.0))
    with serve(fake) as api_base:
        spec = LLMSpec(kind="litellm", model="openai/m", api_base=api_base, max_retries=0,
                       requests_per_minute=240)  # fmt: skip
        with open_llm(spec, slots=8) as llm:
            errors: list[BaseException] = []

            def ask(i: int) -> None:
                try:
                    llm.complete(LLMRequest((Message("user", f"q{i}"),), prompt_id="p"))
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=ask, args=(i,)) for i in range(24)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert errors == [] and fake.rate_limited == 0 and len(fake.bodies) == 24


def test_the_limits_stay_out_of_the_recipe_digest() -> None:
    from chainrag.recipes.overrides import parse_all

    limited = load_changed(ANSINT, parse_all(["llm.requests_per_minute=500",
                                              "llm.tokens_per_minute=200000"]))  # fmt: skip
    assert limited.llm.requests_per_minute == 500
    assert recipe_digest(limited) == recipe_digest(load_changed(ANSINT))


def test_a_run_paced_under_the_providers_rate_finishes_without_a_429(
    tmp_path: Path, own_cache: Path
) -> None:
    """``chainrag run`` with 6 questions in flight against a stand-in that refuses a fourth
    request within a second: at 150 requests a minute every question is answered and none of
    its requests is refused."""
    fake = FakeOpenAI([], reply="Paris", rate=(3, 1.0))
    with serve(fake) as api_base:
        args = run_args(tmp_path, "--llm", "openai/m", "--api-base", api_base,
                        "--set", "llm.requests_per_minute=150", "--concurrency", "6",
                        limit=6)  # fmt: skip
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "6 answered" in result.output and "failed" not in result.output
    assert fake.rate_limited == 0 and len(fake.bodies) == 6
