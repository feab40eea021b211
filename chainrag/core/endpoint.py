"""A remote model's endpoint: what answers its requests, and how it is reached. One rule for
the LLM (:func:`chainrag.llm.endpoint_identity`) and for every encoder that names an endpoint
(an embedder or reranker served over HTTP), so that a cache keyed by one means the same thing
for all of them.

    endpoint_identity("litellm", "openai/m", "http://U:P@Host:8000/v1/")
    # 'litellm:openai/m@http://host:8000/v1'
    endpoint_identity("litellm", "openai/m", None, {"top_p": 0.9})
    # 'litellm:openai/m@provider-default+params:{"top_p":0.9}'

**What answers** (:func:`endpoint_identity`): the client's kind (``litellm``, ``local_gguf``:
the protocol a request is sent in), the model string it sends (provider prefix included), the
endpoint's base URL as :func:`normal_base` writes it (``provider-default`` for the provider's
own), and the further request parameters that change answers (``llm.params``: ``top_p``,
``extra_body``, …), left out where there are none, so that identities made before they existed
stay as they were. A cache of answers keys on it: two servers behind one model name never share
answers. It never holds a credential: a URL's userinfo is dropped, and a key is read from the
environment, never named here.

**How it is reached** (:data:`ACCESS_FIELDS`): the base URL again (a server moved to another
port answers as before), the requests in flight, the timeout, the retries and the variable
that holds the key. None changes an
answer of a given endpoint, so none is part of a recipe's digest (a run folder resumes after a
change, and says so); the base URL stays in the identity above, since a cached answer is that
server's.

Layer: core; imports the standard library only.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

ACCESS_FIELDS = ("api_base", "concurrency", "timeout_s", "max_retries", "api_key_env")
"""The fields of a remote model's section that say how its endpoint is reached, not what it
answers: where (``api_base``), how many requests at once, how long each may take, how often one
is tried again, and the environment variable that holds its key (its name, never the key)."""

REACH = "reach"
"""The metadata key of a remote encoder's field that says how its endpoint is reached, not what
it computes (``api_base``, ``concurrency``, ``timeout_s``, ``max_retries``, the pacing limits):
left out of :func:`chainrag.recipes.structure.identity`, the form digests are made of, as the
LLM's :data:`ACCESS_FIELDS` are. A cache keyed by that form adds the encoder's endpoint
identity (the model and the normalised ``api_base``), so two servers never share values."""

REACHED = {REACH: True}
"""The metadata of such a field: ``api_base: str | None = attrs.field(default=None,
metadata=REACHED)``."""

PROVIDER_DEFAULT = "provider-default"
"""The identity's endpoint where none is given: the provider's own, as its client knows it."""

DEFAULT_PORTS = {"http": 80, "https": 443}


def normal_base(url: str) -> str:
    """``url`` as an identity holds it: without userinfo, the scheme and host lower-cased, a
    scheme's default port and a trailing ``/`` dropped (``HTTP://u:p@Host:80/v1/`` →
    ``http://host/v1``)."""
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address, bracketed again
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def endpoint_identity(
    kind: str, model: str, api_base: str | None, params: Mapping[str, Any] | None = None
) -> str:
    """What answers a request sent by a client of ``kind`` for ``model`` to ``api_base`` (None:
    the provider's own endpoint) with the further ``params`` (see the module docstring)."""
    base = normal_base(api_base) if api_base else PROVIDER_DEFAULT
    return f"{kind}:{model}@{base}" + params_part(params)


def params_part(params: Mapping[str, Any] | None) -> str:
    """The further parameters' part of an identity: ``+params:`` and their canonical JSON, or
    ``""`` for none (so an identity without them is what it was before they existed)."""
    if not params:
        return ""
    return "+params:" + json.dumps(params, sort_keys=True, separators=(",", ":"))


def access_changes(
    before: Mapping[str, Any], now: Mapping[str, Any], fields: Sequence[str] = ACCESS_FIELDS
) -> list[str]:
    """Each of ``fields`` whose value differs between two records of them, as
    ``concurrency 16 (was 8)``; a field a record lacks is unset there."""

    def shown(value: Any) -> str:
        return "unset" if value is None else str(value)

    return [
        f"{name} {shown(now.get(name))} (was {shown(before.get(name))})"
        for name in fields
        if before.get(name) != now.get(name)
    ]
