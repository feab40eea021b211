"""A managed local LLM server: ``llama_cpp.server`` as a child process on 127.0.0.1.

    with LocalServer.for_model("qwen2.5-coder-1.5b") as server:
        ...  # litellm model "openai/qwen2.5-coder-1.5b", api_base=server.api_base

By default (``prompt_cache="aligned"``, the :mod:`chainrag.llm.fresh_server` entry point with
``--aligned``) the server keeps the whole ``n_batch`` chunks of the previous prompt that the new
one shares and evaluates the rest as a full evaluation would, so a request gets the same answer
whatever came before it, bit for bit, in less time; ``prompt_cache="fresh"`` (the same entry
point without it) evaluates every prompt in full; ``prompt_cache="reuse"`` runs
``llama_cpp.server`` as it is, which evaluates only what follows the prefix a prompt shares
with the previous request's.

The server gets a free port, its output goes to a log file, and the context manager waits
until it answers ``GET /v1/models`` and then one completion of a few hundred prompt tokens
(:data:`PROBE_TEXT`) before handing it out: a llama.cpp build that cannot run on this CPU (the
AMX kernels of a ``-march=native`` build die with a general protection fault on virtualised
Sapphire/Granite Rapids hosts, but only on a multi-token prompt) fails here, with the signal and
the build's CPU features named, not question by question; a server killed by SIGKILL while it
starts was killed from outside (the kernel's out-of-memory killer does that), and is said so,
with the memory it had at its peak and the machine's; any other end names itself and the log
(:mod:`chainrag.llm.deaths`). A process that exits later is told by :meth:`LocalServer.death`;
:meth:`LocalServer.restart` starts it again on a new port (:class:`chainrag.llm.served.ServedLLM`
does both).

It is stopped when the block ends — normally, on an
error, or on Ctrl-C — and, as a last resort, by an ``atexit`` hook, a SIGTERM handler, and the
kernel: the child asks Linux to send it SIGKILL if its parent dies (``PR_SET_PDEATHSIG``), so
not even ``kill -9`` of the parent leaves it running. It is SIGKILL, not SIGTERM, because the
server finishes a completion in flight before it honours SIGTERM (uvicorn's graceful shutdown),
which kept a core busy for up to a minute after the run was gone; the server holds no state
worth a graceful exit. :meth:`LocalServer.stop` likewise sends SIGKILL after a short grace.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, TracebackType
from typing import Literal

from chainrag.core.errors import ServerError
from chainrag.core.llama_build import llama_build
from chainrag.llm.deaths import CPU_SIGNALS, exit_words, process_peak_kib, start_failure
from chainrag.recipes.models import DEFAULT_N_CTX, LocalModel, get_model, model_cache_dir, require

HOST = "127.0.0.1"
PromptCache = Literal["fresh", "aligned", "reuse"]
"""``fresh``: every prompt evaluated in full; ``aligned``: the previous prompt's whole chunks
kept (the same logits as ``fresh``); ``reuse``: llama.cpp's prefix reuse."""
ENTRY_POINTS: dict[PromptCache, list[str]] = {
    "fresh": ["chainrag.llm.fresh_server"],
    "aligned": ["chainrag.llm.fresh_server", "--aligned"],
    "reuse": ["llama_cpp.server"],
}
"""The module the server runs as (``python -m MODULE [ARG]``), by prompt cache mode."""
DEFAULT_N_THREADS = 2
PROBE_TEXT = (
    "Before it is called ready, the local server reads this note of a few hundred tokens and "
    "writes one token, so that a build of llama.cpp that cannot run on this processor fails "
    "now, with its cause named, and not on the first question of a run. "
) * 6 + "Reply with one word: ready?"
"""The start-up check's prompt: about 300 tokens, evaluated as one batch (a one-token prompt
takes other kernels and does not show the crash)."""
_LIVE: set[LocalServer] = set()
MEMORY_POLL_S = 0.1
"""How often the starting server's peak memory is read from ``/proc``."""


def running_servers(proc: Path = Path("/proc")) -> list[tuple[int, int]]:
    """(pid, CPU threads) of each local LLM server of ours running on this machine, read from
    Linux's ``/proc`` (none where there is no ``/proc``); a server started without
    ``--n_threads`` counts as one thread."""
    modules = {entry[0] for entry in ENTRY_POINTS.values()}
    found = []
    for cmdline in proc.glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:  # the process ended, or is not ours to read
            continue
        if _after(words, "-m") not in modules:
            continue
        threads = _after(words, "--n_threads")
        found.append((int(cmdline.parent.name), int(threads) if threads.isdigit() else 1))
    return sorted(found)


def _after(words: list[str], flag: str) -> str:
    """The word after the first ``flag`` in a command line; empty when there is none."""
    at = words.index(flag) + 1 if flag in words else len(words)
    return words[at] if at < len(words) else ""


def crowding(servers: list[tuple[int, int]], cores: int, threads: int = DEFAULT_N_THREADS) -> str:
    """A warning when a new server's ``threads`` and those of the ``servers`` already running
    exceed the ``cores``; empty when they fit. llama.cpp's threads spin while they wait for
    each other, so two servers on the same cores each run several times slower than alone."""
    busy = sum(n for _, n in servers)
    if not servers or busy + threads <= cores:
        return ""
    pids = ", ".join(f"pid {pid}: {n} threads" for pid, n in servers)
    return (
        f"note: {len(servers)} local LLM server(s) already run here ({pids}); with this one "
        f"{busy + threads} threads share {cores} cores, and llama.cpp's threads spin while "
        "they wait, so each job runs several times slower than alone (a call of ~50 s took "
        "200-350 s with two on 2 cores). Run one job at a time when seconds matter."
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def server_command(
    model_file: Path,
    alias: str,
    port: int,
    n_ctx: int,
    n_threads: int,
    prompt_cache: PromptCache = "fresh",
) -> list[str]:
    """The command line that serves ``model_file`` under ``alias`` on 127.0.0.1:``port``."""
    return [
        sys.executable, "-m", *ENTRY_POINTS[prompt_cache],
        "--model", str(model_file),
        "--model_alias", alias,
        "--host", HOST,
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads),
    ]  # fmt: skip


class LocalServer:
    """One ``llama_cpp.server`` child process serving one GGUF model.

    Args:
        model: The local model to serve.
        model_file: Its verified GGUF file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads for inference.
        prompt_cache: ``fresh`` (every prompt evaluated in full), ``aligned`` or ``reuse`` (see
            the module).
        log_dir: Folder for the server's log (default: ``<model cache>/../logs``).
        ready_timeout_s: How long to wait for the server to answer.
        command: Override: port → command line (tests use it to serve a stand-in).
    """

    def __init__(
        self,
        model: LocalModel,
        model_file: Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int = DEFAULT_N_THREADS,
        prompt_cache: PromptCache = "aligned",
        log_dir: Path | None = None,
        ready_timeout_s: float = 300.0,
        command: Callable[[int], list[str]] | None = None,
    ) -> None:
        self.model = model
        self.alias = model.name
        self.prompt_cache = prompt_cache
        self.ready_timeout_s = ready_timeout_s
        self.log_dir = log_dir or model_cache_dir().parent / "logs"
        self.command_for = command or (
            lambda port: server_command(
                model_file, self.alias, port, n_ctx, n_threads, prompt_cache
            )
        )
        self.stand_in = command is not None
        self._new_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.peak_kib: int | None = None  # the process's peak resident memory, while starting

    def _new_port(self) -> None:
        self.port = free_port()
        self.log_path = self.log_dir / f"llama-server-{self.alias}-{self.port}.log"
        self.command = self.command_for(self.port)

    @classmethod
    def for_model(cls, name: str, **kwargs: object) -> LocalServer:
        """A server for the cached, verified local model ``name`` (not started yet)."""
        if importlib.util.find_spec("llama_cpp") is None:
            raise ServerError(
                "llama-cpp-python is not installed; it is pinned in requirements/llama.txt "
                "(make llama compiles it for this CPU and installs it; make demo does too)"
            )
        model = get_model(name)
        return cls(model, require(model), **kwargs)  # type: ignore[arg-type]

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible base URL, for litellm's ``api_base``."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def litellm_model(self) -> str:
        """The litellm model string that reaches this server."""
        return f"openai/{self.alias}"

    def start(self) -> LocalServer:
        """Start the process and wait until it answers ``GET /v1/models`` and one completion
        of :data:`PROBE_TEXT`; a ServerError naming how it died otherwise."""
        _install_sigterm_handler()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # only sets the parent-death signal
                start_new_session=True,  # Ctrl-C reaches us; we stop the child ourselves
            )
        _LIVE.add(self)
        self.peak_kib = None
        try:
            with self._memory_watched():
                self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self) -> LocalServer:
        """Stop the process if it still runs and start a new one on a new port."""
        self.stop()
        self._new_port()
        return self.start()

    @contextlib.contextmanager
    def _memory_watched(self) -> Iterator[None]:
        """Keep :attr:`peak_kib` current while the block runs, from a thread that reads the
        process's ``/proc`` status every :data:`MEMORY_POLL_S` (a process killed for memory
        can no longer be asked how much it had)."""
        done = threading.Event()
        proc = self.process

        def watch() -> None:
            while proc is not None and not done.wait(MEMORY_POLL_S):
                peak = process_peak_kib(proc.pid)
                self.peak_kib = max(peak, self.peak_kib or 0) if peak else self.peak_kib

        watcher = threading.Thread(target=watch, name="llm-server-memory", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError(self._start_failure("while starting"))
            if self.answers():
                self._probe(deadline)
                return
            time.sleep(0.25)
        raise ServerError(
            f"the local LLM server did not answer within {self.ready_timeout_s:.0f} s; "
            f"log: {self.log_path}"
        )

    def _probe(self, deadline: float) -> None:
        """One completion of :data:`PROBE_TEXT` (one output token); a ServerError if the
        process dies on it (:func:`~chainrag.llm.deaths.start_failure`), answers it with an
        error, or is silent."""
        body = {
            "model": self.alias,
            "messages": [{"role": "user", "content": PROBE_TEXT}],
            "max_tokens": 1,
            "temperature": 0.0,
        }
        request = urllib.request.Request(  # noqa: S310 - our own server on 127.0.0.1
            f"{self.api_base}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        timeout = max(1.0, deadline - time.monotonic())
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
                answer.read()
                return
        except urllib.error.HTTPError as exc:
            if self.death(wait_s=1.0) is None:
                raise ServerError(
                    f"the local LLM server answered its start-up completion with HTTP "
                    f"{exc.code}; its log ({self.log_path}) ends with:\n{self.log_tail()}"
                ) from None
        except (urllib.error.URLError, OSError):
            pass
        if self.death(wait_s=5.0) is None:
            raise ServerError(
                f"the local LLM server did not answer its start-up completion within "
                f"{timeout:.0f} s; log: {self.log_path}"
            )
        raise ServerError(self._start_failure("on its start-up check"))

    def _start_failure(self, when: str) -> str:
        """What the start says of a process that ended ``when`` (see :func:`start_failure`)."""
        assert self.process is not None
        code = self.process.returncode
        assert code is not None
        build = None if self.stand_in or -code not in CPU_SIGNALS else llama_build()
        return start_failure(code, when, self.peak_kib, build, self.log_path, self.log_tail())

    def death(self, wait_s: float = 0.0) -> str | None:
        """How the process ended (``was killed by signal SIGSEGV``, ``exited with code 1``),
        waiting up to ``wait_s`` for it to end; None while it runs (or was never started)."""
        proc = self.process
        if proc is None:
            return None
        try:
            code = proc.wait(timeout=wait_s) if wait_s > 0 else proc.poll()
        except subprocess.TimeoutExpired:
            return None
        return None if code is None else exit_words(code)

    def answers(self) -> bool:
        """True if the server answers ``GET /v1/models`` with 200."""
        try:
            with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as r:  # noqa: S310
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL after ``timeout_s``); safe to call twice."""
        _LIVE.discard(self)
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def stop_all() -> None:
    """Stop every server this process started and has not stopped."""
    for server in list(_LIVE):
        server.stop()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    stop_all()
    raise SystemExit(128 + signum)


def _install_sigterm_handler() -> None:
    """On SIGTERM, stop our servers and exit, unless the program handles SIGTERM itself."""
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        with contextlib.suppress(ValueError):  # not in the main thread: atexit still covers us
            signal.signal(signal.SIGTERM, _on_sigterm)


atexit.register(stop_all)
