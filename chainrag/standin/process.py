"""The stand-in as a process: ``chainrag standin``'s body (:func:`run_standin`), what its
options mean (:func:`parse_latency`, :func:`parse_pair`, :class:`Settings`) and its log of one
JSON line a request (:class:`RequestLog`).

    run_standin(Settings(port=0, key="sk-try", rate=(5, 1.0)), print)   # until stopped
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import attrs

from chainrag.standin.replies import Body, standin_reply
from chainrag.standin.server import FakeOpenAI, fixed, http_server, lognormal


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


def _latency(text: str | None) -> Callable[[], float] | None:
    return parse_latency(text) if text is not None else None


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
    embed_latency: str | None = None
    rerank_latency: str | None = None

    def lines(self, api_base: str) -> list[str]:
        """The start-up output: where it listens, what it does, how to use it."""
        key = f"Bearer {self.key} asked (401 otherwise)" if self.key else "none asked"
        latency = self.latency if ":" in self.latency else f"{self.latency} s"
        latency += "".join(f", {name} {spec if ':' in spec else f'{spec} s'}" for name, spec in
                           (("embeddings", self.embed_latency), ("rerank", self.rerank_latency))
                           if spec is not None)  # fmt: skip
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
                      key=settings.key, rate=settings.rate, bursts=settings.bursts,
                      encoder_latency=_latency(settings.embed_latency),
                      rerank_latency=_latency(settings.rerank_latency))  # fmt: skip
    fake.bodies = LastOnly()
    with contextlib.ExitStack() as stack:
        if settings.log is not None:
            stream = stack.enter_context(settings.log.open("a", encoding="utf-8", buffering=1))
            fake.log = RequestLog(stream)
        server = http_server(fake, settings.port)
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


class LastOnly(list[Body]):
    """``bodies`` of a long-running server: only the last one kept."""

    def append(self, body: Body) -> None:
        self[:] = [body]
