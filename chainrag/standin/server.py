"""A fault-injecting OpenAI-compatible server on 127.0.0.1: the stand-in for an API or a served
model in every test that needs one.

Each POST to /v1/chat/completions takes the next behaviour from a script: ``ok``, an HTTP
status (``429``, ``500``, ``400``...), ``timeout`` (answers after the client gave up),
``malformed`` (a body that is not JSON), ``empty`` (JSON without choices). A request that asks
for ``logprobs`` gets ``top`` as its first token's top log-probabilities, where ``top`` is
given. The request bodies are kept for inspection.

On demand, like a provider: ``key`` refuses any request without ``Authorization: Bearer KEY``
(401, OpenAI's message); ``rate=(n, window_s)`` answers 429 with a ``Retry-After`` to a request
that would be the (n+1)-th started within ``window_s`` seconds; ``bursts=(every_s, for_s)``
answers 429 to every request in the first ``for_s`` seconds of each ``every_s``, with a
``Retry-After`` until the burst ends. chainrag's preflight probe
(:data:`chainrag.llm.preflight.PROBE`, one token) is answered and kept in ``probes``, apart from
the script and ``bodies``, so a scripted test sees only the run's own requests.

Like a model: ``reply`` is a text, or a function of the request body;
:func:`~chainrag.standin.replies.standin_reply` answers every prompt of chainrag's methods with
something they parse (JSON where a schema is asked), deterministically, from the request's own
text. ``latency`` gives each answer's seconds: :func:`fixed` or :func:`lognormal` (a median and
a heavy tail, seeded).

Like an embedding server and a reranker: POST ``/v1/embeddings`` answers each input with the
``hashed_bow`` embedder's vector of its text (:func:`~chainrag.core.vectors.hashed_bag_of_words`,
``dimensions`` of them, 512 where the request names none; as numbers, or base64 where the request
asks ``encoding_format: base64``), so a run with a remote embedder here can be compared with a
local run; POST ``.../rerank`` answers in Cohere's format, each document's score the cosine of
its vector with the query's. Both have the key, rate, burst and latency modes (``encoder_latency``
in place of ``latency`` where given, and ``rerank_latency`` in place of that for a rerank, so an
embedding server and a reranker can answer at their own pace) and their own script
(``encoder_script``: ``ok`` or an HTTP status); their bodies are kept in ``embedded`` and
``reranked``, and chainrag's encoder preflight (one input ``OK``) in ``probes``. With
``numbers_only``, an embedding request that asks for base64 is refused (400), as a server that
knows only numbers refuses it.

Each request, with how it was answered, goes to ``log`` where one is set. As a process,
``chainrag standin`` (:mod:`chainrag.standin.process`): a user tests a set-up with it without
paying, and bench/api_throughput.py runs it so, to measure chainrag's CPU without it.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from chainrag.core.vectors import hashed_bag_of_words
from chainrag.standin.replies import Body, standin_reply


def fixed(seconds: float) -> Callable[[], float]:
    """Every answer after ``seconds``."""
    return lambda: seconds


def lognormal(median_s: float, p99_s: float, seed: int = 0) -> Callable[[], float]:
    """Answers after a log-normal time: half within ``median_s``, 1 in 100 after ``p99_s``."""
    sigma = math.log(p99_s / median_s) / 2.326  # the 99th percentile of a standard normal
    draw = random.Random(seed)  # noqa: S311 (latencies, not secrets)
    lock = threading.Lock()

    def latency() -> float:
        with lock:
            return draw.lognormvariate(math.log(median_s), sigma)

    return latency


def completion_body(text: str = "ok", top: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }
    if top is not None:
        tops = [{"token": t, "logprob": p, "bytes": list(t.encode())} for t, p in top]
        first = {**tops[0], "top_logprobs": tops}
        body["choices"][0]["logprobs"] = {"content": [first]}
    return body


class FakeOpenAI:
    def __init__(
        self,
        script: list[str],
        *,
        reply: str | Callable[[Body], str] = "ok",
        hang_s: float = 3.0,
        delay_s: float = 0.0,
        top: list[tuple[str, float]] | None = None,
        key: str | None = None,
        rate: tuple[int, float] | None = None,
        latency: Callable[[], float] | None = None,
        bursts: tuple[float, float] | None = None,
        encoder_latency: Callable[[], float] | None = None,
        encoder_script: list[str] | None = None,
        rerank_latency: Callable[[], float] | None = None,
        numbers_only: bool = False,
    ) -> None:
        self.script = list(script)
        self.numbers_only = numbers_only
        self.encoder_latency = encoder_latency
        self.rerank_latency = rerank_latency
        self.encoder_script = list(encoder_script or ())
        self.embedded: list[dict[str, Any]] = []  # embedding requests answered
        self.reranked: list[dict[str, Any]] = []  # rerank requests answered
        self.latency = latency
        self.bursts = bursts
        self.born = time.monotonic()
        self.burst_limited = 0  # 429s sent for ``bursts``
        self.key = key
        self.rate = rate
        self.started: list[float] = []  # when each request counted by ``rate`` came in
        self.rate_limited = 0  # 429s sent for ``rate``
        self.probes: list[dict[str, Any]] = []
        self.delay_s = delay_s
        self.reply = reply
        self.hang_s = hang_s
        self.top = top
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.log: Callable[[dict[str, Any]], None] | None = None

    def next_behaviour(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else "ok"

    def over_rate(self) -> float | None:
        """For ``rate``: the seconds until a request may start, if this one is over the rate
        (it is then not counted), else None (it is counted)."""
        if self.rate is None:
            return None
        n, window = self.rate
        with self.lock:
            now = time.monotonic()
            self.started = [t for t in self.started if now - t < window]
            if len(self.started) >= n:
                self.rate_limited += 1
                return window - (now - self.started[0])
            self.started.append(now)
            return None

    def in_burst(self) -> float | None:
        """For ``bursts``: the seconds until the burst now under way ends, or None."""
        if self.bursts is None:
            return None
        every, length = self.bursts
        into = (time.monotonic() - self.born) % every
        if into >= length:
            return None
        with self.lock:
            self.burst_limited += 1
        return length - into

    def next_encoder_behaviour(self) -> str:
        with self.lock:
            return self.encoder_script.pop(0) if self.encoder_script else "ok"

    def encoder_wait(self, encoder: str = "embeddings") -> float:
        """The seconds an embedding or (``encoder`` ``rerank``) a rerank answer takes."""
        reranker = self.rerank_latency if encoder == "rerank" else None
        latency = reranker or self.encoder_latency or self.latency
        return self.delay_s + (latency() if latency is not None else 0.0)

    def answer(self, body: Body) -> str:
        """The reply's text for ``body``."""
        return self.reply(body) if callable(self.reply) else self.reply

    def logged(
        self, method: str, path: str, body: Body, status: int, what: str, seconds: float
    ) -> None:
        """Tell ``log`` (where there is one) of a request and how it was answered."""
        if self.log is None:
            return
        messages = body.get("messages") or []
        self.log({
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "method": method, "path": path,
            "status": status, "what": what, "seconds": round(seconds, 3),
            "model": body.get("model"), "messages": len(messages),
            "prompt_chars": sum(len(str(m.get("content", ""))) for m in messages),
        })  # fmt: skip


def is_probe(body: dict[str, Any]) -> bool:
    """Whether ``body`` is chainrag's one-token preflight request."""
    from chainrag.llm.preflight import PROBE

    wanted = [{"role": m.role, "content": m.content} for m in PROBE]
    return body.get("max_tokens") == 1 and body.get("messages") == wanted


def completed(fake: FakeOpenAI, body: Body) -> tuple[int, str, str]:
    """The status, body and what it was (in a word or two) answering a completion request
    that passed the key and rate checks, as the server's next behaviour says (after its delay
    and latency): the answer, a timeout then the answer, a malformed or empty body, or an
    injected error status."""
    fake.bodies.append(body)
    behaviour = fake.next_behaviour()
    time.sleep(fake.delay_s + (fake.latency() if fake.latency is not None else 0.0))
    if behaviour == "timeout":
        time.sleep(fake.hang_s)
        behaviour = "ok"
    if behaviour == "ok":
        top = fake.top if body.get("logprobs") else None
        return 200, json.dumps(completion_body(fake.answer(body), top)), "ok"
    if behaviour == "malformed":
        return 200, '{"id": "x", "choices": [ this is not json', behaviour
    if behaviour == "empty":
        return 200, json.dumps({"id": "x", "object": "chat.completion", "choices": []}), behaviour
    return int(behaviour), injected_body(int(behaviour)), "injected"


def injected_body(status: int) -> str:
    """The error body of an injected ``status``."""
    return json.dumps({"error": {"message": f"injected {status}", "type": "test", "code": status}})


class _Handler(BaseHTTPRequestHandler):
    """A request to the stand-in, answered as its :class:`FakeOpenAI` (``fake``) says."""

    fake: FakeOpenAI

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model"}]}))
        self.fake.logged("GET", self.path, {}, 200, "models", 0.0)

    def do_POST(self) -> None:
        started = time.monotonic()
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        status, what = self._answer(body)
        self.fake.logged("POST", self.path, body, status, what, time.monotonic() - started)

    def _answer(self, body: Body) -> tuple[int, str]:
        """Answer ``body``; the status sent and what it was, in a word or two."""
        fake = self.fake
        encoder = self.path.rstrip("/").rsplit("/", 1)[-1]
        if fake.key is not None and self.headers.get("Authorization") != f"Bearer {fake.key}":
            message = "Incorrect API key provided. You can find your API key in your account."
            error = {"message": message, "type": "invalid_request_error",
                     "code": "invalid_api_key"}  # fmt: skip
            return self._send(401, json.dumps({"error": error})), "key refused"
        if (
            encoder == "embeddings"
            and fake.numbers_only
            and body.get("encoding_format") == "base64"
        ):
            error = {"message": "encoding_format: only 'float' is supported",
                     "type": "invalid_request_error"}  # fmt: skip
            return self._send(400, json.dumps({"error": error})), "base64 refused"
        if is_probe(body) or is_encoder_probe(encoder, body):
            fake.probes.append(body)
            return self._send(200, json.dumps(probe_body(encoder, body))), "probe"
        for why, wait in (("burst", fake.in_burst()), ("rate", fake.over_rate())):
            if wait is not None:
                error = {"message": "Rate limit reached for requests", "type": "requests",
                         "code": "rate_limit_exceeded"}  # fmt: skip
                headers = {"Retry-After": f"{wait:.3f}"}
                return self._send(429, json.dumps({"error": error}), headers), why
        if encoder in ENCODERS:
            return self._encode(encoder, body), encoder
        status, text, what = completed(fake, body)
        return self._send(status, text), what

    def _encode(self, encoder: str, body: dict[str, Any]) -> int:
        """An embedding or rerank request, after the key and rate checks; the status."""
        fake = self.fake
        (fake.embedded if encoder == "embeddings" else fake.reranked).append(body)
        behaviour = fake.next_encoder_behaviour()
        time.sleep(fake.encoder_wait(encoder))
        if behaviour != "ok":
            return self._send(int(behaviour), injected_body(int(behaviour)))
        try:
            answer = ENCODERS[encoder](body)
        except (KeyError, TypeError, ValueError) as exc:
            error = {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}}
            return self._send(400, json.dumps(error))
        return self._send(200, json.dumps(answer))

    def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> int:
        data = body.encode()
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return status


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    """The request handler class of a server answering as ``fake`` says."""
    return type("Handler", (_Handler,), {"fake": fake})


STANDIN_DIMENSIONS = 512
"""The stand-in embedding model's dimensions where a request names none (``hashed_bow``'s)."""


def word_tokens(text: str) -> int:
    """The stand-in's token count of a text: its words (at least one)."""
    return max(1, len(text.split()))


def embeddings_body(body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI embeddings answer to ``body``: each input's hashed bag of words."""
    texts = body["input"]
    texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
    dim = int(body.get("dimensions") or STANDIN_DIMENSIONS)
    vectors = hashed_bag_of_words(texts, dim)
    as_base64 = body.get("encoding_format") == "base64"
    data = [{"object": "embedding", "index": i,
             "embedding": (base64.b64encode(v.astype("<f4").tobytes()).decode() if as_base64
                           else [float(x) for x in v])}
            for i, v in enumerate(vectors)]  # fmt: skip
    tokens = sum(word_tokens(t) for t in texts)
    return {"object": "list", "data": data, "model": body.get("model", "standin-embed"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}  # fmt: skip


def rerank_body(body: dict[str, Any]) -> dict[str, Any]:
    """Cohere's rerank answer to ``body``: each document's cosine with the query, in hashed
    bags of words, best first (``top_n`` of them)."""
    documents = [d if isinstance(d, str) else str(d.get("text", "")) for d in body["documents"]]
    vectors = hashed_bag_of_words([str(body["query"]), *documents], STANDIN_DIMENSIONS)
    scores = (vectors[1:] @ vectors[0]).astype(np.float64)
    order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
    top = order[: int(body.get("top_n") or len(documents))]
    results = [{"index": i, "relevance_score": float(scores[i])} for i in top]
    return {"id": "rerank-standin", "results": results,
            "meta": {"billed_units": {"search_units": 1}}}  # fmt: skip


ENCODERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "embeddings": embeddings_body, "rerank": rerank_body}  # fmt: skip
"""The stand-in's encoder endpoints, by the last part of the request's path."""


def is_encoder_probe(encoder: str, body: dict[str, Any]) -> bool:
    """Whether ``body`` is chainrag's encoder preflight: one input ``OK`` embedded, or one
    document ``OK`` ranked (:func:`chainrag.llm.encoders.check_encoder`)."""
    if encoder == "embeddings":
        return body.get("input") == ["OK"]
    return encoder == "rerank" and body.get("query") == "OK" and body.get("documents") == ["OK"]


def probe_body(encoder: str, body: dict[str, Any]) -> dict[str, Any]:
    """The answer to a preflight request."""
    return ENCODERS[encoder](body) if encoder in ENCODERS else completion_body("OK")


@functools.cache
def shared_standin() -> str:
    """The ``api_base`` of a stand-in started once for this process (a daemon thread, never
    stopped): what the remote encoders' registered examples call in conformance checks."""
    server = http_server(FakeOpenAI([], reply=standin_reply))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


@contextmanager
def serve(fake: FakeOpenAI) -> Iterator[str]:
    """Run ``fake`` on a free port; yields its ``api_base``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a run with 64 requests in flight connects at once


def http_server(fake: FakeOpenAI, port: int = 0) -> ThreadingHTTPServer:
    """``fake`` bound to 127.0.0.1:``port`` (0: a free one), to be served
    (``serve_forever``); an OSError where the port is taken."""
    return _Server(("127.0.0.1", port), _handler(fake))
