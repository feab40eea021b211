"""The LLM of a managed local server that may die: restarted once, then named.

    llm = ServedLLM(server, backend_for=lambda base, gone: LiteLLMBackend(api_base=base, gone=gone))

A request goes to the server's current address. When an attempt fails and the server's process
has exited, the backend raises :class:`~chainrag.core.errors.ServerDiedError` at once instead
of retrying a dead process (:attr:`LiteLLMBackend.gone`). The first death restarts the server
(a new process on a new port, proven by its start-up completion) and the request is asked
again; a second death, or a restart that fails, raises a ServerDiedError that names both ends
and the server's last log lines, and which ends the run (a
:class:`~chainrag.core.errors.RunStopError`): what was answered is kept, and the same command
resumes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from chainrag.core.errors import ServerDiedError, ServerError
from chainrag.core.types import LLMRequest, LLMResponse
from chainrag.llm.server import LocalServer
from chainrag.protocols.llm import LLM

BackendFor = Callable[[str, Callable[[], str | None]], LLM]
"""(the server's base URL, its death check) → the backend that talks to it."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class ServedLLM:
    """Completes requests on ``server``, restarting it at most ``restarts`` times.

    Args:
        server: The started server.
        backend_for: Makes the backend for the server's current address.
        restarts: How many deaths are met with a restart before one ends the run.
        say: Where the restart is told (standard error by default).
    """

    def __init__(
        self,
        server: LocalServer,
        backend_for: BackendFor,
        *,
        restarts: int = 1,
        say: Callable[[str], None] = _stderr,
    ) -> None:
        self.server = server
        self.backend_for = backend_for
        self.restarts_left = restarts
        self.say = say
        self.deaths: list[str] = []
        self._lock = threading.Lock()
        self._generation = 0
        self._backend = backend_for(server.api_base, self._gone)

    def _gone(self) -> str | None:
        return self.server.death(wait_s=1.0)

    def complete(self, request: LLMRequest) -> LLMResponse:
        while True:
            with self._lock:
                generation, backend = self._generation, self._backend
            try:
                return backend.complete(request)
            except ServerDiedError as exc:
                self._restart(generation, exc, request)

    def _restart(self, generation: int, exc: ServerDiedError, request: LLMRequest) -> None:
        """Restart the server that ``exc`` found dead, once; raise when that was done already.
        A request that failed on a server another thread has restarted since just goes again."""
        with self._lock:
            if self._generation != generation:
                return
            death = self.server.death() or "stopped answering"
            log, tail = self.server.log_path, self.server.log_tail()
            self.deaths.append(death)
            if self.restarts_left <= 0:
                raise self._final(request, log, tail) from exc
            self.restarts_left -= 1
            self.say(
                f"the local LLM server {death} (log: {log}); restarting it once and asking "
                "the question in flight again"
            )
            try:
                self.server.restart()
            except ServerError as failed:
                self.deaths.append(f"could not be restarted ({failed})")
                raise self._final(request, log, tail) from failed
            self._backend = self.backend_for(self.server.api_base, self._gone)
            self._generation += 1

    def _final(self, request: LLMRequest, log: object, tail: str) -> ServerDiedError:
        ends = "; then it ".join(self.deaths)
        return ServerDiedError(
            f"the local LLM server died {len(self.deaths)} time(s): it {ends}. The run stops "
            "here: every answered question is kept, and the same command resumes. A build "
            "that crashes on this CPU is rebuilt with `make llama-rebuild`. The server's log "
            f"({log}) ends with:\n{tail}",
            prompt_id=request.prompt_id,
            model=request.model,
        )
