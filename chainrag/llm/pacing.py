"""Live requests paced under an endpoint's limits: at most ``slots`` in flight, at most
``requests_per_minute`` started and ``tokens_per_minute`` sent a minute, and a 429's
``Retry-After`` honoured by every request, not only the one that got it.

    pacer = Pacer(Limits(slots=8, requests_per_minute=500, tokens_per_minute=200_000))
    with pacer.turn(request_tokens(request)):
        response = send(request)
    pacer.settle(request_tokens(request), response.usage)

:class:`~chainrag.llm.backend.LiteLLMBackend` takes a turn for every attempt, retries included,
below the response cache (:func:`chainrag.llm.open_llm`): an answer from the cache takes no turn.
Each per-minute limit is a token bucket in virtual time (a request reserves its share at once and
waits until the bucket would have held it), so requests start evenly spaced in arrival order,
without polling. The requests' bucket holds one request (no burst: a limit of 60 a minute starts
one a second); the tokens' bucket holds a minute's tokens. A request's tokens are estimated
before it is sent (:func:`request_tokens`: its text's characters / 4, plus ``max_tokens``, which
providers such as OpenAI count against the limit) and settled against its usage after.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import attrs

from chainrag.core.types import LLMRequest, Usage

CHARS_PER_TOKEN = 4
"""The estimate of a request's prompt tokens before it is sent: its characters / 4 (OpenAI's
rule of thumb for English; the settlement after the answer corrects it)."""


_POSITIVE = attrs.validators.optional(attrs.validators.gt(0))


@attrs.frozen
class Limits:
    """An endpoint's limits: requests in flight, requests and tokens a minute; None is none."""

    slots: int | None = attrs.field(default=None, validator=_POSITIVE)
    requests_per_minute: float | None = attrs.field(default=None, validator=_POSITIVE)
    tokens_per_minute: float | None = attrs.field(default=None, validator=_POSITIVE)


def request_tokens(request: LLMRequest) -> int:
    """The tokens ``request`` counts against a per-minute limit, estimated before it is sent."""
    chars = sum(len(m.content) for m in request.messages)
    return -(-chars // CHARS_PER_TOKEN) + (request.max_tokens or 0)


class Bucket:
    """A token bucket in virtual time: ``capacity`` units, refilled at ``rate`` a second.

    :meth:`reserve` takes its units at once (the level may go below zero) and returns how long
    the caller waits before it may go: callers go in the order they reserved, evenly spaced."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float]) -> None:
        self.rate, self.capacity, self.clock = rate, capacity, clock
        self.level = capacity
        self.at = clock()
        self.lock = threading.Lock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def reserve(self, units: float) -> float:
        """Take ``units``; the seconds to wait until the bucket would have held them."""
        with self.lock:
            self._refill()
            self.level -= units
            return max(0.0, -self.level / self.rate)

    def give_back(self, units: float) -> None:
        """Return ``units`` reserved but not used (negative: take more than reserved)."""
        with self.lock:
            self._refill()
            self.level = min(self.capacity, self.level + units)


class Pacer:
    """Turns for live requests under :class:`Limits`, shared by every thread of a run."""

    def __init__(
        self,
        limits: Limits,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.limits, self.clock, self.sleep = limits, clock, sleep
        self.slots = threading.BoundedSemaphore(limits.slots) if limits.slots else None
        rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
        self.requests = Bucket(rpm / 60, 1.0, clock) if rpm else None
        self.tokens = Bucket(tpm / 60, tpm, clock) if tpm else None
        self.held_until = 0.0
        self.lock = threading.Lock()

    def hold(self, seconds: float) -> None:
        """No request starts for ``seconds`` from now (a 429's ``Retry-After``)."""
        with self.lock:
            self.held_until = max(self.held_until, self.clock() + seconds)

    def _wait_hold(self) -> None:
        while (left := self.held_until - self.clock()) > 0:
            self.sleep(left)

    @contextlib.contextmanager
    def turn(self, tokens: int) -> Iterator[None]:
        """A slot, then the wait the limits ask for; the request is sent inside the block."""
        with self.slots if self.slots is not None else contextlib.nullcontext():
            self._wait_hold()
            wait = max(
                self.requests.reserve(1) if self.requests else 0.0,
                self.tokens.reserve(tokens) if self.tokens else 0.0,
            )
            if wait > 0:
                self.sleep(wait)
            self._wait_hold()
            yield

    def settle(self, estimated: int, usage: Usage) -> None:
        """Correct the tokens' bucket by what the request used (prompt and completion)."""
        if self.tokens is not None and usage.calls:
            self.tokens.give_back(estimated - usage.prompt_tokens - usage.completion_tokens)
