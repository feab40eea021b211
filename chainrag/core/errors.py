"""The project's exceptions.

Every error a user can cause names the input and what is wrong with it. Errors that carry
several problems (a recipe file with three mistakes) keep all of them, each with its path.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import ClassVar

import attrs


class ChainragError(Exception):
    """Base class of every error raised on purpose by chainrag."""


class RunStopError(ChainragError):
    """An error that is the run's, not one question's (the managed server died twice, the LLM
    cannot answer at all): a session tells it by its class, stops, records no line for the
    questions it stopped, and raises it again once the session's end is recorded."""

    stops_run: ClassVar[bool] = True


class Interrupted(KeyboardInterrupt):
    """A signal that asks a run to stop (SIGTERM), raised as Ctrl-C's KeyboardInterrupt is, so
    that one path keeps what is finished, records the session's end and exits 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_name(exc: BaseException) -> str:
    """``SIGTERM`` for :class:`Interrupted`, ``SIGINT`` for any other KeyboardInterrupt."""
    return signal.Signals(exc.signum).name if isinstance(exc, Interrupted) else "SIGINT"


@attrs.frozen
class Problem:
    """One thing wrong with an input, located by a path such as ``x.yaml.graph.edges[0].m``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} @ {self.path}"


class RecipeError(ChainragError):
    """A recipe file (or mapping) is not valid; ``problems`` lists every problem found."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"{source}: {count} {noun}\n{lines}")


class UnknownComponentError(ChainragError, KeyError):
    """A registry key that no component is registered under."""

    def __init__(self, stage: str, key: str, known: Sequence[str], suggestion: str | None) -> None:
        self.stage = stage
        self.key = key
        self.known = tuple(known)
        self.suggestion = suggestion
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        listed = ", ".join(self.known) if self.known else "(none registered)"
        self.message = f"unknown {stage} {key!r}.{hint} Known: {listed}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class RegistryError(ChainragError):
    """A component was registered wrongly (bad key, duplicate key, not an attrs class)."""


class PluginError(ChainragError):
    """A plugin module named in a recipe or an entry point could not be loaded."""


class LLMError(ChainragError):
    """An LLM call failed; raised to the caller, never turned into an answer string.

    Attributes:
        prompt_id: The prompt whose call failed.
        model: The model string.
        attempts: How many attempts were made.
    """

    retryable = False

    def __init__(self, message: str, *, prompt_id: str = "", model: str = "", attempts: int = 1):
        self.prompt_id = prompt_id
        self.model = model
        self.attempts = attempts
        where = f" [{model} · {prompt_id} · {attempts} attempt{'s' if attempts != 1 else ''}]"
        super().__init__(message + (where if model or prompt_id else ""))


class LLMRateLimitError(LLMError):
    """The provider kept answering 429 (rate limit) after every retry.

    Attributes:
        retry_after_s: The wait the provider asked for (its ``Retry-After``), if it said.
    """

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        prompt_id: str = "",
        model: str = "",
        attempts: int = 1,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, prompt_id=prompt_id, model=model, attempts=attempts)
        self.retry_after_s = retry_after_s


class LLMTimeoutError(LLMError):
    """The call timed out on every attempt."""

    retryable = True


class LocalTimeoutError(LLMTimeoutError):
    """The managed local LLM server did not answer within the timeout. Not asked again: the
    server goes on generating the abandoned reply before it takes another request, so a second
    attempt would wait for that and then generate the same reply again."""

    retryable = False


class LLMConnectionError(LLMError):
    """The server could not be reached."""

    retryable = True


class LLMServerError(LLMError):
    """The server answered 5xx on every attempt."""

    retryable = True


class LLMResponseError(LLMError):
    """The server's answer was malformed (no choices, no content, unreadable body)."""

    retryable = True


class LLMRequestError(LLMError):
    """The request was refused (4xx other than 429: bad request, authentication, not found)."""


class LLMUnsupportedError(LLMRequestError):
    """The endpoint answered without what the request asked for (the first token's
    log-probabilities): not retried, since asking again cannot change what it gives."""


class LLMUnavailableError(LLMError, RunStopError):
    """The LLM cannot answer at all — a missing key, a model litellm cannot route, an endpoint
    that refuses the connection or the key — found before the first live request: the run
    stops (:class:`RunStopError`) with the provider's message, before any question fails for it."""


class LLMOutputError(LLMError):
    """The model's text could not be read as the structure asked for, even after one repair."""


class ServerError(ChainragError):
    """The managed local LLM server could not be started or stopped."""


class ServerDiedError(LLMError, RunStopError):
    """The managed local LLM server's process exited while it was serving: no retry goes to a
    dead process. The first death restarts the server once and the request is asked again; a
    second ends the run (:class:`RunStopError`): what was answered is kept, the same command
    resumes."""
