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

As a process (bench/api_throughput.py runs it so, to measure chainrag's CPU without it):
``python -m chainrag.standin.server --latency lognormal:1:5 --bursts 60:2 --port-file F``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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
    ) -> None:
        self.script = list(script)
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

    def answer(self, body: Body) -> str:
        """The reply's text for ``body``."""
        return self.reply(body) if callable(self.reply) else self.reply


def is_probe(body: dict[str, Any]) -> bool:
    """Whether ``body`` is chainrag's one-token preflight request."""
    from chainrag.llm.preflight import PROBE

    wanted = [{"role": m.role, "content": m.content} for m in PROBE]
    return body.get("max_tokens") == 1 and body.get("messages") == wanted


def completed(fake: FakeOpenAI, body: dict[str, Any]) -> tuple[int, str]:
    """The status and body answering a completion request that passed the key and rate
    checks, as the server's next behaviour says (after its delay and latency): the answer, a
    timeout then the answer, a malformed or empty body, or an injected error status."""
    fake.bodies.append(body)
    behaviour = fake.next_behaviour()
    time.sleep(fake.delay_s + (fake.latency() if fake.latency is not None else 0.0))
    if behaviour == "timeout":
        time.sleep(fake.hang_s)
        behaviour = "ok"
    if behaviour == "ok":
        top = fake.top if body.get("logprobs") else None
        return 200, json.dumps(completion_body(fake.answer(body), top))
    if behaviour == "malformed":
        return 200, '{"id": "x", "choices": [ this is not json'
    if behaviour == "empty":
        return 200, json.dumps({"id": "x", "object": "chat.completion", "choices": []})
    status = int(behaviour)
    error = {"error": {"message": f"injected {status}", "type": "test", "code": status}}
    return status, json.dumps(error)


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model"}]}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            if fake.key is not None and self.headers.get("Authorization") != f"Bearer {fake.key}":
                message = "Incorrect API key provided. You can find your API key in your account."
                error = {"message": message, "type": "invalid_request_error",
                         "code": "invalid_api_key"}  # fmt: skip
                self._send(401, json.dumps({"error": error}))
                return
            if is_probe(body):
                fake.probes.append(body)
                self._send(200, json.dumps(completion_body("OK")))
                return
            if (wait := fake.in_burst()) is not None or (wait := fake.over_rate()) is not None:
                error = {"message": "Rate limit reached for requests", "type": "requests",
                         "code": "rate_limit_exceeded"}  # fmt: skip
                self._send(429, json.dumps({"error": error}), {"Retry-After": f"{wait:.3f}"})
                return
            self._send(*completed(fake, body))

        def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
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

    return Handler


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


def _latency(spec: str) -> Callable[[], float]:
    """``fixed:S`` or ``lognormal:MEDIAN:P99`` (seconds)."""
    kind, *numbers = spec.split(":")
    values = [float(n) for n in numbers]
    return fixed(values[0]) if kind == "fixed" else lognormal(values[0], values[1])


def main() -> None:
    """Serve :func:`standin_reply` until killed; the port is written to ``--port-file``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", default="fixed:0", help="fixed:S or lognormal:MEDIAN:P99")
    parser.add_argument("--bursts", default="", help="EVERY_S:FOR_S: 429s for FOR_S each EVERY_S")
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args()
    bursts = tuple(float(n) for n in args.bursts.split(":")) if args.bursts else None
    fake = FakeOpenAI([], reply=standin_reply, latency=_latency(args.latency),
                      bursts=bursts)  # type: ignore[arg-type]  # fmt: skip
    fake.bodies = _Forgetful()
    server = _Server(("127.0.0.1", 0), _handler(fake))
    args.port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a run with 64 requests in flight connects at once


class _Forgetful(list[Body]):
    """``bodies`` of a long-running server: only the last one kept."""

    def append(self, body: Body) -> None:
        self[:] = [body]


if __name__ == "__main__":
    main()
