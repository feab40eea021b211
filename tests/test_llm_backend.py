"""The litellm backend against a fault-injecting OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import random

import attrs
import pytest

from chainrag.core.errors import (
    LLMError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    LLMUnsupportedError,
)
from chainrag.core.types import LLMRequest, Message
from chainrag.llm.backend import LiteLLMBackend, RetryPolicy, redact
from chainrag.standin.server import FakeOpenAI, serve

MODEL = "openai/fake-model"


def request(schema: str | None = None) -> LLMRequest:
    return LLMRequest(
        (Message("user", "Where is Paris?"),), "answer_short", model=MODEL,
        temperature=0.0, max_tokens=16, seed=3, json_schema=schema,
    )  # fmt: skip


@pytest.fixture
def slept() -> list[float]:
    return []


def backend(api_base: str, slept: list[float], retries: int = 3, **kw: object) -> LiteLLMBackend:
    return LiteLLMBackend(
        api_base=api_base, api_key="unused", timeout_s=1.0, retry=RetryPolicy(retries),
        sleep=slept.append, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def run(script: list[str], slept: list[float], **kw: object) -> tuple[FakeOpenAI, object]:
    fake = FakeOpenAI(script, hang_s=3.0)
    with serve(fake) as api_base:
        try:
            return fake, backend(api_base, slept, **kw).complete(request())
        except LLMError as exc:
            return fake, exc


def test_plain_completion_and_usage(slept: list[float]) -> None:
    fake, response = run([], slept)
    assert response.text == "ok"  # type: ignore[attr-defined]
    usage = response.usage  # type: ignore[attr-defined]
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 7, 2)
    body = fake.bodies[0]
    assert body["messages"] == [{"role": "user", "content": "Where is Paris?"}]
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 16, 3)
    assert "response_format" not in body
    assert slept == []


def test_log_probabilities_are_asked_for_and_read(slept: list[float]) -> None:
    top = [("A", -0.25), ("B", -1.5), (" A", -4.0)]
    fake = FakeOpenAI([], reply="A", top=top)
    with serve(fake) as api_base:
        llm = backend(api_base, slept, retries=0)
        plain = llm.complete(request())
        asked = llm.complete(attrs.evolve(request(), top_logprobs=3))
    assert plain.top_logprobs == () and "logprobs" not in fake.bodies[0]
    assert (fake.bodies[1]["logprobs"], fake.bodies[1]["top_logprobs"]) == (True, 3)
    assert (asked.text, asked.top_logprobs) == ("A", tuple(top))


def test_an_endpoint_without_log_probabilities_is_named_and_not_retried(
    slept: list[float],
) -> None:
    asked = attrs.evolve(request(), top_logprobs=3)
    fake = FakeOpenAI([])
    with serve(fake) as api_base:
        llm = backend(api_base, slept, retries=3)
        with pytest.raises(LLMUnsupportedError, match=r"top 3 log-probabilities, the response has"):
            llm.complete(asked)
    assert len(fake.bodies) == 1 and slept == []


@pytest.mark.parametrize(
    ("script", "calls"),
    [(["429", "429"], 3), (["500", "503"], 3), (["502"], 2), (["timeout"], 2),
     (["malformed"], 2), (["empty", "500"], 3)],
)  # fmt: skip
def test_transient_failures_are_retried(script: list[str], calls: int, slept: list[float]) -> None:
    fake, response = run(script, slept)
    assert getattr(response, "text", response) == "ok"
    assert len(fake.bodies) == calls
    assert len(slept) == calls - 1


@pytest.mark.parametrize(
    ("fault", "error"),
    [("429", LLMRateLimitError), ("500", LLMServerError), ("timeout", LLMTimeoutError),
     ("malformed", LLMResponseError), ("empty", LLMResponseError)],
)  # fmt: skip
def test_persistent_failures_raise_typed_errors(
    fault: str, error: type[LLMError], slept: list[float]
) -> None:
    fake, result = run([fault] * 3, slept, retries=2)
    assert isinstance(result, error), result
    assert result.attempts == 3
    assert "fake-model" in str(result) and "answer_short" in str(result)
    assert len(fake.bodies) == 3


@pytest.mark.parametrize("status", ["400", "401", "404"])
def test_client_errors_are_not_retried(status: str, slept: list[float]) -> None:
    fake, result = run([status], slept)
    assert isinstance(result, LLMRequestError)
    assert len(fake.bodies) == 1
    assert slept == []


def test_backoff_grows_with_jitter() -> None:
    policy = RetryPolicy(max_retries=5, base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(0)
    delays = [policy.delay(i, rng) for i in range(5)]
    for i, d in enumerate(delays):
        cap = min(8.0, 2.0**i)
        assert cap / 2 <= d <= cap


def test_schema_goes_as_response_format(slept: list[float]) -> None:
    schema = json.dumps({"type": "object", "properties": {"answer": {"type": "string"}}})
    fake = FakeOpenAI([], reply='{"answer": "France"}')
    with serve(fake) as api_base:
        backend(api_base, slept, json_mode="json_schema").complete(request(schema))
        backend(api_base, slept, json_mode="json_object").complete(request(schema))
        backend(api_base, slept, json_mode="instructions").complete(request(schema))
        backend(api_base, slept, json_mode="auto").complete(request(schema))  # unknown model
    sent = fake.bodies[0]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == json.loads(schema)
    assert fake.bodies[1]["response_format"] == {
        "type": "json_object",
        "schema": json.loads(schema),
    }
    assert "response_format" not in fake.bodies[2]
    assert "response_format" not in fake.bodies[3]


def test_api_keys_never_appear_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "sk-very-secret-value")
    assert redact("failed with key sk-very-secret-value") == "failed with key ***"


def test_real_network_completion_is_refused_in_tests(slept: list[float]) -> None:
    llm = LiteLLMBackend(retry=RetryPolicy(0), sleep=slept.append)
    with pytest.raises(LLMRequestError, match="unit tests may not call a real LLM"):
        llm.complete(request())
