"""A persistent LLM response cache: SQLite in WAL mode, JSON values, keyed by the whole request.

The key is the sha256 of the request's canonical JSON — model, messages, sampling parameters,
schema, prompt id and version — together with the identity of the endpoint that answers it
(:func:`chainrag.llm.endpoint_identity`: a local GGUF's sha256, or the rule every remote model
shares, :func:`chainrag.core.endpoint.endpoint_identity`: the model string with its base URL
normalised, without credentials), so two servers behind one model name never share answers,
and the key never contains an API key. :data:`KEY_VERSION` is part of every key: keys made
under an older rule (which left the endpoint out) are never served. Values are JSON, never
pickle. Several processes may write at once: WAL mode, a busy timeout, and ``INSERT OR
REPLACE`` of identical content make that safe. A hit is not a call: it reports ``cached=True``
and usage with one cache hit, no tokens.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Literal

import attrs

from chainrag.core.sqlite_file import SQLiteFile
from chainrag.core.types import LLMRequest, LLMResponse, Usage
from chainrag.protocols.llm import LLM
from chainrag.recipes.structure import unstructure

CacheMode = Literal["use", "bypass", "refresh"]
"""``use``: read and write; ``bypass``: neither; ``refresh``: call anew and overwrite."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    prompt_id TEXT NOT NULL,
    model TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS endpoints (
    endpoint TEXT PRIMARY KEY,
    first REAL NOT NULL
);
"""
"""``endpoints``: each endpoint identity the cache has put an answer of (a cache made before the
table existed knows none of its answers' endpoints)."""


KEY_VERSION = 2
"""1: the request alone; 2: the request and the endpoint that answers it."""


def request_key(request: LLMRequest, endpoint: str = "") -> str:
    """The cache key of ``request`` sent to ``endpoint``: sha256 of their canonical JSON."""
    fields = unstructure(request)
    if fields.get("top_logprobs") is None:  # added after KEY_VERSION 2: keys stay as they were
        fields.pop("top_logprobs", None)
    keyed = {"v": KEY_VERSION, "endpoint": endpoint, "request": fields}
    canonical = json.dumps(keyed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache(SQLiteFile):
    """A SQLite file of responses; one connection per thread, shared safely between processes."""

    def __init__(self, path: Path | str, *, busy_timeout_s: float = 60.0) -> None:
        super().__init__(path, _SCHEMA, busy_timeout_s=busy_timeout_s)
        self._endpoints: set[str] = set()  # recorded by this process already

    def get(self, request: LLMRequest, endpoint: str = "") -> LLMResponse | None:
        row = (
            self._connect()
            .execute("SELECT value FROM responses WHERE key = ?", (request_key(request, endpoint),))
            .fetchone()
        )
        if row is None:
            return None
        value = json.loads(row[0])
        top = tuple((str(token), float(logprob)) for token, logprob in value.get("top", ()))
        return LLMResponse(
            text=value["text"],
            model=value["model"],
            usage=Usage(cache_hits=1),
            cached=True,
            top_logprobs=top,
        )

    def holds_endpoint(self, endpoint: str) -> bool:
        """Whether an answer of ``endpoint`` (its identity: the model and where it is served,
        :func:`chainrag.llm.endpoint_identity`) was put here; the model's name alone says
        nothing (another server may serve a model by that name)."""
        found = (
            self._connect()
            .execute("SELECT 1 FROM endpoints WHERE endpoint = ?", (endpoint,))
            .fetchone()
        )
        return found is not None

    def put(self, request: LLMRequest, response: LLMResponse, endpoint: str = "") -> None:
        value = {
            "text": response.text,
            "model": response.model,
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
        }
        if response.top_logprobs:
            value["top"] = [list(pair) for pair in response.top_logprobs]
        con = self._connect()
        con.execute(
            "INSERT OR REPLACE INTO responses (key, prompt_id, model, value, created) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                request_key(request, endpoint),
                request.prompt_id,
                request.model,
                json.dumps(value),
                time.time(),
            ),
        )
        if endpoint not in self._endpoints:
            con.execute(
                "INSERT OR IGNORE INTO endpoints (endpoint, first) VALUES (?, ?)",
                (endpoint, time.time()),
            )
            self._endpoints.add(endpoint)

    def __len__(self) -> int:
        return self._count("responses")


@attrs.define
class CachedLLM:
    """An LLM that answers from a :class:`ResponseCache` when it can (see :data:`CacheMode`).

    ``endpoint`` identifies what ``inner`` reaches (see the module docstring); it is part of
    every key, so answers cached from one server are never served for another.
    """

    inner: LLM
    cache: ResponseCache
    mode: CacheMode = "use"
    endpoint: str = ""

    def complete(self, request: LLMRequest) -> LLMResponse:
        if self.mode == "use" and (hit := self.cache.get(request, self.endpoint)) is not None:
            return hit
        response = self.inner.complete(request)
        if self.mode != "bypass":
            self.cache.put(request, response, self.endpoint)
        return response
