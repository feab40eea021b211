"""Issue 19's LLM-side regressions: the cache key names the answering endpoint, a reply with a
lone surrogate stops nothing, credentials are masked by value and stripped from URLs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from chainrag.core.credentials import redact, strip_userinfo
from chainrag.core.errors import LLMRequestError
from chainrag.core.types import LLMRequest, LLMResponse, Message
from chainrag.llm import endpoint_identity, open_llm
from chainrag.llm.cache import ResponseCache, request_key
from chainrag.recipes.recipe import LLMSpec
from chainrag.standin.server import FakeOpenAI, serve


def ask(text: str = "capital of France?") -> LLMRequest:
    return LLMRequest(messages=(Message("user", text),), prompt_id="t")


def spec(api_base: str, **kw: object) -> LLMSpec:
    return LLMSpec(
        kind="litellm", model="openai/fixed-name", api_base=api_base, max_retries=0, **kw
    )  # type: ignore[arg-type]


def test_two_servers_behind_one_model_name_do_not_share_cached_answers(tmp_path: Path) -> None:
    """The reproducer: the same model string at two api_bases. The second server refuses
    every call (401); it must be asked, and its refusal must reach the caller."""
    cache = tmp_path / "llm.sqlite"
    good, refusing = FakeOpenAI([], reply="Paris"), FakeOpenAI(["401"] * 5)
    with serve(good) as base_a, serve(refusing) as base_b:
        with open_llm(spec(base_a), cache_path=cache) as llm:
            assert llm.complete(ask()).text == "Paris"
        with open_llm(spec(base_b), cache_path=cache) as llm, pytest.raises(LLMRequestError):
            llm.complete(ask())
        assert len(refusing.bodies) == 1
        with open_llm(spec(base_a), cache_path=cache) as llm:
            assert llm.complete(ask()).cached  # the first server's answer is still cached
    assert len(good.bodies) == 1


def test_endpoint_identity_names_the_model_file_or_the_stripped_url() -> None:
    local = endpoint_identity(LLMSpec(prompt_cache="reuse"))
    assert local.startswith("gguf:sha256:") and len(local) == len("gguf:sha256:") + 64
    other = endpoint_identity(LLMSpec(model="qwen2.5-coder-0.5b", prompt_cache="reuse"))
    assert other != local
    remote = endpoint_identity(spec("https://alice:s3cr3t-pw@llm.example/v1"))
    assert remote == "litellm:openai/fixed-name@https://llm.example/v1"
    assert "s3cr3t" not in remote
    assert endpoint_identity(LLMSpec(kind="litellm", model="openai/gpt-4o-mini")).endswith(
        "@provider-default"
    )


def test_keys_of_the_old_rule_are_not_served(tmp_path: Path) -> None:
    """A cache written before the endpoint was part of the key must not answer any more."""
    import hashlib

    from chainrag.recipes.structure import unstructure

    path = tmp_path / "c.sqlite"
    ResponseCache(path).close()
    old = hashlib.sha256(
        json.dumps(unstructure(ask()), sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO responses VALUES (?, 't', 'm', ?, 0)",
            (old, json.dumps({"text": "stale", "model": "m"})),
        )
    cache = ResponseCache(path)
    assert cache.get(ask()) is None and cache.get(ask(), "any") is None
    assert request_key(ask(), "a") != request_key(ask(), "b") != old


def test_a_reply_with_a_lone_surrogate_is_cached_and_read_back(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put(ask(), LLMResponse(text="Paris \ud800", model="m"))
    hit = cache.get(ask())
    assert hit is not None and hit.text == "Paris \ud800"


@pytest.mark.parametrize(
    ("url", "stripped"),
    [
        ("https://user:pw@host:8443/v1", "https://host:8443/v1"),
        ("http://token@127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://host/v1", "https://host/v1"),
    ],
)
def test_strip_userinfo(url: str, stripped: str) -> None:
    assert strip_userinfo(url) == stripped


def test_redact_masks_every_credential_by_value() -> None:
    env = {
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "OPENAI_API_KEY": "sk-1",  # short, still masked (4 characters)
        "DB_PASSWORD": 'p"w\\d',  # masked in its JSON-escaped form too
        "HOME": "/root",  # not a credential
    }
    text = (
        'aws wJalrXUtnFEMI/K7MDENG key sk-1 json {"pw": "p\\"w\\\\d"} home /root '
        "url https://bob:hunter22@llm.example/v1"
    )
    masked = redact(text, environ=env)
    for secret in ("wJalrXUtnFEMI", "sk-1", 'p\\"w', "hunter22", "bob"):
        assert secret not in masked, secret
    assert "/root" in masked and "https://***@llm.example/v1" in masked


def test_settings_named_like_credentials_are_not_masked() -> None:
    """Ray sets RAY_AUTH_MODE=token: masking it turned every max_tokens into max_***s, and a
    run's recipe.yaml could not be read back."""
    env = {"RAY_AUTH_MODE": "token", "SSH_AUTH_SOCK": "/tmp/agent.sock", "HF_TOKEN": "hf_abc1"}
    masked = redact("llm: {max_tokens: 512} via /tmp/agent.sock with hf_abc1", environ=env)
    assert masked == "llm: {max_tokens: 512} via /tmp/agent.sock with ***"
