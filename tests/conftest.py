"""Shared test set-up: hypothesis profiles and a guard against any non-loopback connection."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from hypothesis import HealthCheck, settings

from chainrag.llm.backend import import_litellm

settings.register_profile(
    "default", deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", deadline=None, max_examples=200, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

ROOT = Path(__file__).resolve().parent.parent
DATA_ROOT = ROOT / "chainrag" / "data" / "files"  # the datasets that ship with chainrag

TEST_MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
"""The local models tests load, which ``make test`` fetches and verifies first (the Makefile's
TEST_MODELS; tests/test_models.py holds the two lists equal)."""


def under_ci() -> bool:
    """Whether the tests run under CI (``CI`` set, as CI services set it, and not false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def need_model(name: str) -> None:
    """Skip the calling test where the local model ``name`` (one of :data:`TEST_MODELS`) or
    llama-cpp-python is missing, with the command that provides it; under CI fail instead:
    ``make test`` provides both, so there a missing one is a broken set-up, not a reason for a
    test to pass unseen."""
    from chainrag.recipes import models

    assert name in TEST_MODELS, f"{name}: add it to TEST_MODELS and to the Makefile's"
    missing = None
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        missing = "llama-cpp-python is not installed: make llama"
    if missing is None:
        status = models.check(models.get_model(name), full=False)
        if status.state != "ok":
            missing = f"{name} is not in the model cache ({status.state}): chainrag models fetch"
    if missing is not None:
        if under_ci():
            pytest.fail(f"{missing} (make test fetches it; under CI a missing model fails)")
        pytest.skip(missing)


def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX paths
        return True
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _private_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Indexes and embeddings go to a per-session folder; the model cache stays shared."""
    from chainrag.recipes.models import model_cache_dir

    monkeypatch.setenv("CHAINRAG_MODEL_CACHE", str(model_cache_dir()))
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests never reach the network: any connection off 127.0.0.0/8 fails loudly."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise RuntimeError(f"tests may not connect to {address!r}: only loopback is allowed")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def _loopback_url(url: object) -> bool:
    if not isinstance(url, str):
        return False
    host = urlparse(url).hostname or ""
    return _is_loopback((host, 0))


@pytest.fixture(autouse=True)
def _no_real_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any litellm completion, embedding or rerank that is not aimed at a server on 127.0.0.1
    fails loudly."""
    litellm = import_litellm()

    def refuse(name: str, real: Any) -> Any:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if not _loopback_url(kwargs.get("api_base")):
                raise RuntimeError(
                    f"unit tests may not call a real LLM: {name}(model={kwargs.get('model')!r}) "
                    "without a loopback api_base; use chainrag.llm.fake.ScriptedLLM"
                )
            return real(*args, **kwargs)

        return guarded

    monkeypatch.setattr(litellm, "completion", refuse("completion", litellm.completion))
    monkeypatch.setattr(litellm, "acompletion", refuse("acompletion", litellm.acompletion))
    monkeypatch.setattr(litellm, "embedding", refuse("embedding", litellm.embedding))
    monkeypatch.setattr(litellm, "rerank", refuse("rerank", litellm.rerank))
