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

As a process, ``chainrag standin`` (:func:`run_standin`): a user tests a set-up with it
without paying, and bench/api_throughput.py runs it so, to measure chainrag's CPU without it:
``chainrag standin --port 0 --latency lognormal:1:5 --bursts 60:2 --log requests.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

import attrs

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


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model"}]}))
            fake.logged("GET", self.path, {}, 200, "models", 0.0)

        def do_POST(self) -> None:
            started = time.monotonic()
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            status, what = self._answer(body)
            fake.logged("POST", self.path, body, status, what, time.monotonic() - started)

        def _answer(self, body: Body) -> tuple[int, str]:
            """Answer ``body``; the status sent and what it was, in a word or two."""
            if fake.key is not None and self.headers.get("Authorization") != f"Bearer {fake.key}":
                message = "Incorrect API key provided. You can find your API key in your account."
                error = {"message": message, "type": "invalid_request_error",
                         "code": "invalid_api_key"}  # fmt: skip
                return self._send(401, json.dumps({"error": error})), "key refused"
            if is_probe(body):
                fake.probes.append(body)
                return self._send(200, json.dumps(completion_body("OK"))), "probe"
            for why, wait in (("burst", fake.in_burst()), ("rate", fake.over_rate())):
                if wait is not None:
                    error = {"message": "Rate limit reached for requests", "type": "requests",
                             "code": "rate_limit_exceeded"}  # fmt: skip
                    headers = {"Retry-After": f"{wait:.3f}"}
                    return self._send(429, json.dumps({"error": error}), headers), why
            fake.bodies.append(body)
            behaviour = fake.next_behaviour()
            time.sleep(fake.delay_s + (fake.latency() if fake.latency is not None else 0.0))
            if behaviour == "timeout":
                time.sleep(fake.hang_s)
                behaviour = "ok"
            if behaviour == "ok":
                top = fake.top if body.get("logprobs") else None
                return self._send(200, json.dumps(completion_body(fake.answer(body), top))), "ok"
            if behaviour == "malformed":
                return self._send(200, '{"id": "x", "choices": [ this is not json'), behaviour
            if behaviour == "empty":
                empty = {"id": "x", "object": "chat.completion", "choices": []}
                return self._send(200, json.dumps(empty)), behaviour
            status = int(behaviour)
            injected = {"message": f"injected {status}", "type": "test", "code": status}
            return self._send(status, json.dumps({"error": injected})), "injected"

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


# --------------------------------------------------------------------------- as a process


def parse_latency(text: str) -> Callable[[], float]:
    """``S``, ``fixed:S`` or ``lognormal:MEDIAN:P99`` (seconds); a ValueError saying the forms."""
    kind, _, rest = text.partition(":")
    try:
        if not rest:
            return fixed(_seconds(kind))
        numbers = [_seconds(n) for n in rest.split(":")]
        if kind == "fixed" and len(numbers) == 1:
            return fixed(numbers[0])
        if kind == "lognormal" and len(numbers) == 2 and 0 < numbers[0] < numbers[1]:
            return lognormal(numbers[0], numbers[1])
    except ValueError:
        pass
    raise ValueError(f"{text!r}: expected S, fixed:S or lognormal:MEDIAN:P99 (seconds, the "
                     "99th percentile above the median)")  # fmt: skip


def parse_pair(text: str, form: str) -> tuple[float, float]:
    """``A:B``, two positive numbers (``form`` names them, for the error)."""
    first, sep, second = text.partition(":")
    try:
        pair = (float(first), float(second))
    except ValueError:
        pair = (0.0, 0.0)
    if not sep or min(pair) <= 0:
        raise ValueError(f"{text!r}: expected {form}, two positive numbers")
    return pair


def _seconds(text: str) -> float:
    value = float(text)
    if value < 0 or not math.isfinite(value):
        raise ValueError(text)
    return value


@attrs.frozen
class Settings:
    """What ``chainrag standin`` serves: where, with which faults, logged where."""

    port: int = 8000
    key: str | None = None
    rate: tuple[int, float] | None = None
    latency: str = "0"
    bursts: tuple[float, float] | None = None
    log: Path | None = None

    def lines(self, api_base: str) -> list[str]:
        """The start-up output: where it listens, what it does, how to use it."""
        key = f"Bearer {self.key} asked (401 otherwise)" if self.key else "none asked"
        latency = self.latency if ":" in self.latency else f"{self.latency} s"
        rate = (f"{self.rate[0]} requests a {self.rate[1]:g} s window, then 429 with "
                "Retry-After" if self.rate else "none")  # fmt: skip
        bursts = (f"429 for {self.bursts[1]:g} s of every {self.bursts[0]:g} s" if self.bursts
                  else "none")  # fmt: skip
        log = f"{self.log} (one JSON line a request)" if self.log else "none"
        env = f"OPENAI_API_KEY={self.key} " if self.key else ""
        return [
            f"stand-in OpenAI-compatible server at {api_base} (Ctrl-C stops it)",
            "  replies  chainrag's prompts answered deterministically (JSON where a schema is "
            "asked); nothing is paid, nothing leaves this machine",
            f"  key      {key}",
            f"  latency  {latency}",
            f"  rate     {rate}",
            f"  bursts   {bursts}",
            f"  log      {log}",
            "try a recipe against it:",
            f"  {env}chainrag run RECIPE --dataset musique --limit 3 --llm openai/stand-in "
            f"--api-base {api_base}",
        ]


def run_standin(settings: Settings, say: Callable[[str], None], port_file: Path | None = None,
                ) -> None:  # fmt: skip
    """Serve :func:`~chainrag.standin.replies.standin_reply` as ``settings`` say until the
    process is stopped: the body of ``chainrag standin``. The port (a free one for 0) is
    written to ``port_file`` once it listens, for a script that starts it."""
    fake = FakeOpenAI([], reply=standin_reply, latency=parse_latency(settings.latency),
                      key=settings.key, rate=settings.rate, bursts=settings.bursts)  # fmt: skip
    fake.bodies = _Forgetful()
    with contextlib.ExitStack() as stack:
        if settings.log is not None:
            stream = stack.enter_context(settings.log.open("a", encoding="utf-8", buffering=1))
            fake.log = RequestLog(stream)
        server = _Server(("127.0.0.1", settings.port), _handler(fake))
        stack.callback(server.server_close)
        api_base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        for line in settings.lines(api_base):
            say(line)
        if port_file is not None:
            port_file.write_text(str(server.server_address[1]))
        server.serve_forever()


@attrs.define
class RequestLog:
    """One JSON line a request: when, what was asked, how it was answered (never a key)."""

    stream: TextIO
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def __call__(self, line: dict[str, Any]) -> None:
        with self.lock:
            self.stream.write(json.dumps(line, ensure_ascii=False) + "\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a run with 64 requests in flight connects at once


class _Forgetful(list[Body]):
    """``bodies`` of a long-running server: only the last one kept."""

    def append(self, body: Body) -> None:
        self[:] = [body]
