"""The managed server's life cycle, with a stand-in process (the real one: integration test)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chainrag.core.errors import LLMTimeoutError, LocalTimeoutError, ServerDiedError, ServerError
from chainrag.core.llama_build import LlamaBuild
from chainrag.core.types import LLMRequest, Message
from chainrag.llm.backend import LiteLLMBackend, RetryPolicy, import_litellm
from chainrag.llm.deaths import (
    crash_message,
    exit_words,
    killed_message,
    machine_memory_kib,
    peak_rss_kib,
    start_failure,
)
from chainrag.llm.served import ServedLLM
from chainrag.llm.server import PROBE_TEXT, LocalServer, crowding, running_servers, server_command
from chainrag.protocols.llm import LLM
from chainrag.recipes.models import get_model

STANDIN = Path(__file__).with_name("standin_server.py")
ROOT = Path(__file__).resolve().parent.parent


def standin(mode: str) -> Callable[[int], list[str]]:
    return lambda port: [sys.executable, str(STANDIN), str(port), mode]


def make(tmp_path: Path, mode: str, **kw: float) -> LocalServer:
    model = get_model("qwen2.5-coder-0.5b")
    return LocalServer(model, tmp_path / "m.gguf", log_dir=tmp_path, command=standin(mode), **kw)


def gone(pid: int, within_s: float = 10.0) -> bool:
    """True once ``pid`` has exited (a zombie counts as exited)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_command_line_binds_loopback_only() -> None:
    cmd = server_command(Path("/m.gguf"), "qwen", 8123, 4096, 2, prompt_cache="reuse")
    assert cmd[1:3] == ["-m", "llama_cpp.server"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
    assert cmd[cmd.index("--model_alias") + 1] == "qwen"


def _process(proc: Path, pid: str, *words: str) -> None:
    (proc / pid).mkdir()
    (proc / pid / "cmdline").write_bytes("\0".join(words).encode() + b"\0")


def test_running_servers_reads_our_servers_from_proc(tmp_path: Path) -> None:
    """Our two entry points count, with their threads (one when not given); other Python
    processes, a truncated command line and non-process entries do not."""
    py = sys.executable
    _process(tmp_path, "41", py, "-m", "chainrag.llm.fresh_server", "--aligned", "--n_threads", "2")
    _process(tmp_path, "7", py, "-m", "llama_cpp.server", "--model", "m.gguf")
    _process(tmp_path, "9", py, "-m", "chainrag.llm.fresh_server", "--n_threads", "many")
    _process(tmp_path, "12", py, "-m", "pytest", "--n_threads", "2")
    _process(tmp_path, "13", py, "-m")
    (tmp_path / "self").mkdir()
    assert running_servers(tmp_path) == [(7, 1), (9, 1), (41, 2)]
    assert running_servers(tmp_path / "absent") == []


def test_crowding_warns_only_when_the_threads_exceed_the_cores() -> None:
    assert crowding([], cores=2) == ""
    assert crowding([(41, 2)], cores=4) == ""  # 2 + 2 threads on 4 cores fit
    warning = crowding([(41, 2)], cores=2)
    assert "1 local LLM server(s) already run here (pid 41: 2 threads)" in warning
    assert "4 threads share 2 cores" in warning and "one job at a time" in warning


def test_starts_answers_and_stops(tmp_path: Path) -> None:
    server = make(tmp_path, "ok")
    with server:
        pid = server.pid
        assert pid is not None and server.answers()
        assert server.api_base == f"http://127.0.0.1:{server.port}/v1"
        assert server.litellm_model == "openai/qwen2.5-coder-0.5b"
    assert gone(pid)
    assert server.process is None
    assert "stand-in starting" in server.log_path.read_text()
    server.stop()  # twice is fine


def test_stops_on_an_error_inside_the_block(tmp_path: Path) -> None:
    server = make(tmp_path, "ok")
    pids: list[int | None] = []

    def work() -> None:
        with server:
            pids.append(server.pid)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        work()
    assert pids[0] is not None and gone(pids[0])


def test_crash_at_start_reports_the_log(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match=r"exited with code 3 while starting(.|\n)*cannot load"):
        make(tmp_path, "crash").start()


def test_silent_server_times_out_and_is_stopped(tmp_path: Path) -> None:
    server = make(tmp_path, "silent", ready_timeout_s=1.0)
    with pytest.raises(ServerError, match=r"did not answer within 1 s"):
        server.start()
    assert server.process is None


PARENT = textwrap.dedent(
    """
    import signal, sys, time
    # A parent started from a background job inherits SIGINT ignored; Ctrl-C is what is tested.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from chainrag.llm.server import LocalServer
    from chainrag.recipes.models import get_model
    server = LocalServer(get_model("qwen2.5-coder-0.5b"), Path("m"), log_dir=Path({tmp!r}),
                         command=lambda port: [sys.executable, {standin!r}, str(port), {mode!r}])
    with server:
        print(server.pid, flush=True)
        time.sleep(120)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_no_orphan_when_the_parent_is_killed(tmp_path: Path, sig: signal.Signals) -> None:
    child = _killed_parents_child(tmp_path, sig, "ok")
    assert gone(child), f"server {child} outlived its parent after {sig.name}"


def test_a_server_busy_with_a_completion_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """llama.cpp's server ignores SIGTERM while a completion is in flight (it kept a core busy
    45-60 s after kill -9 of a run): the parent-death signal is SIGKILL, so it goes at once."""
    child = _killed_parents_child(tmp_path, signal.SIGKILL, "stubborn")
    assert gone(child, within_s=3.0), f"server {child} outlived its kill -9'd parent by 3 s"


def test_stop_kills_a_server_that_ignores_sigterm_within_seconds(tmp_path: Path) -> None:
    server = make(tmp_path, "stubborn").start()
    pid = server.pid
    assert pid is not None
    server.stop()
    assert gone(pid, within_s=0.5)


def _killed_parents_child(tmp_path: Path, sig: signal.Signals, mode: str) -> int:
    code = PARENT.format(root=str(ROOT), tmp=str(tmp_path), standin=str(STANDIN), mode=mode)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    os.kill(parent.pid, sig)
    parent.wait(timeout=30)
    return child


# --------------------------------------------------------------------------- a build that dies


def test_a_build_that_dies_on_its_start_up_completion_fails_the_start_naming_the_signal(
    tmp_path: Path,
) -> None:
    """GET /v1/models answers, the first completion kills the process (as llama.cpp's AMX path
    does on some CPUs): the start fails with the signal, the log's last lines and what to do,
    and nothing is left running."""
    server = make(tmp_path, "segv-probe")
    with pytest.raises(ServerError) as caught:
        server.start()
    message = str(caught.value)
    assert "was killed by signal SIGSEGV on its start-up check" in message
    assert "make llama-rebuild" in message and "LLAMA_CPU=avx2" in message
    assert "general protection fault (stand-in)" in message  # the log's tail
    assert server.process is None


def test_a_server_killed_on_its_start_up_check_is_said_killed_with_its_memory(
    tmp_path: Path,
) -> None:
    """SIGKILL on the start-up completion (the out-of-memory killer's signal) is a kill from
    outside with the memory the process had, never a build that cannot run on this CPU."""
    server = make(tmp_path, "oom-probe")
    with pytest.raises(ServerError) as caught:
        server.start()
    message = str(caught.value)
    assert message.startswith(
        "the local LLM server was killed by signal SIGKILL on its start-up check: killed from "
        "outside, not a crash — the kernel's out-of-memory killer"
    )
    peak = re.search(r"the server had (\d+) MiB resident at its peak; this machine has "
                     r"[\d.]+ GiB, [\d.]+ GiB available now\.", message)  # fmt: skip
    assert peak is not None and 64 <= int(peak.group(1)) < 1024, message
    assert "cannot run on this CPU" not in message and "make llama-rebuild" not in message
    assert "allocating (stand-in)" in message  # the log's tail
    assert server.process is None


def test_only_cpu_signals_blame_the_build_and_other_ends_name_the_log(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    for sig in (signal.SIGILL, signal.SIGSEGV, signal.SIGBUS):
        said = start_failure(-sig, "on its start-up check", 10, None, log, "tail")
        assert f"killed by signal {sig.name} on its start-up check" in said
        assert "this llama.cpp build cannot run on this CPU" in said
    said = start_failure(-signal.SIGKILL, "while starting", None, None, log, "tail")
    assert said.startswith("the local LLM server was killed by signal SIGKILL while starting")
    assert "the server had memory not measured; this machine has " in said
    assert start_failure(-signal.SIGTERM, "while starting", 10, None, log, "tail") == (
        f"the local LLM server was killed by signal SIGTERM while starting; its log ({log}) "
        "ends with:\ntail"
    )
    machine = (4 * 2**20, None)
    said = killed_message("on its start-up check", 3 * 2**20 + 2**19, machine, log, "tail")
    assert "the server had 3.5 GiB resident at its peak; this machine has 4.0 GiB.\n" in said


def test_memory_is_read_from_proc_status_and_meminfo(tmp_path: Path) -> None:
    status = "Name:\tpython\nVmPeak:\t 900 kB\nVmHWM:\t  51200 kB\nVmRSS:\t  40960 kB\n"
    assert peak_rss_kib(status) == 51200
    assert peak_rss_kib("VmRSS:\t 7 kB\n") == 7 and peak_rss_kib("") is None
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  16384 kB\nMemFree: 1 kB\nMemAvailable:  8192 kB\n")
    assert machine_memory_kib(meminfo) == (16384, 8192)
    assert machine_memory_kib(tmp_path / "none") == (None, None)


def test_llama_cpp_python_missing_names_the_file_that_pins_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name)
    )
    with pytest.raises(ServerError, match=r"pinned in requirements/llama\.txt \(make llama "):
        LocalServer.for_model("qwen2.5-coder-0.5b")
    assert (ROOT / "requirements" / "llama.txt").read_text().count("llama_cpp_python==") == 1


def test_the_start_up_check_is_a_completion_of_a_few_hundred_tokens(tmp_path: Path) -> None:
    with make(tmp_path, "ok") as server:
        assert "completion 1" in server.log_path.read_text()
    assert 1000 <= len(PROBE_TEXT) <= 2500  # ~300 tokens: one multi-token batch, not one token


def test_the_crash_message_names_the_build_and_its_cpu_features(tmp_path: Path) -> None:
    build = LlamaBuild("0.3.36", "0123456789abcdef", ("AVX", "AVX2", "AMX_INT8"),
                       "-DGGML_NATIVE=ON", "native")  # fmt: skip
    message = crash_message("was killed by signal SIGSEGV", build, tmp_path / "x.log", "last")
    assert "llama-cpp-python 0.3.36, native build (-DGGML_NATIVE=ON)" in message
    assert "CPU features AVX AVX2 AMX_INT8" in message and message.endswith("last")
    unknown = LlamaBuild("0.3.36", "0123456789abcdef")
    assert "options unknown" in unknown.describe() and "CPU features unknown" in unknown.describe()


def test_exit_words_name_the_signal_or_the_code() -> None:
    assert exit_words(-signal.SIGSEGV) == "was killed by signal SIGSEGV"
    assert exit_words(-signal.SIGILL) == "was killed by signal SIGILL"
    assert exit_words(3) == "exited with code 3"


class Calls:
    """litellm.completion as it is, with the api_base of every call (every attempt) kept."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        litellm = import_litellm()
        self.bases: list[str] = []
        real = litellm.completion

        def completion(**kwargs: object) -> object:
            self.bases.append(str(kwargs.get("api_base")))
            return real(**kwargs)

        monkeypatch.setattr(litellm, "completion", completion)


def served(server: LocalServer, sleeps: list[float], said: list[str]) -> ServedLLM:
    def backend(base: str, gone: Callable[[], str | None]) -> LLM:
        return LiteLLMBackend(api_base=base, api_key="unused", retry=RetryPolicy(max_retries=4),
                              free=True, sleep=sleeps.append, gone=gone)  # fmt: skip

    return ServedLLM(server, backend, say=said.append)


REQUEST = LLMRequest((Message("user", "What is the capital of France?"),), "sub_answer",
                     model="openai/qwen2.5-coder-0.5b", max_tokens=8)  # fmt: skip


def test_a_server_that_dies_twice_stops_the_run_with_no_retry_to_a_dead_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each process answers its start-up check, then dies on the next completion. The first
    death restarts it (a new port) and the question is asked again; the second raises a
    ServerDiedError that stops the run. Each dead process got exactly one request: no retry."""
    calls, sleeps, said = Calls(monkeypatch), [], []
    server = make(tmp_path, "segv-after-probe")
    with server:
        first = server.api_base
        llm = served(server, sleeps, said)
        with pytest.raises(ServerDiedError) as caught:
            llm.complete(REQUEST)
        second = server.api_base
    assert caught.value.stops_run
    message = str(caught.value)
    assert "died 2 time(s): it was killed by signal SIGSEGV; then it was killed by" in message
    assert "every answered question is kept, and the same command resumes" in message
    assert "general protection fault (stand-in)" in message and "[openai/qwen2.5" in message
    assert first != second
    assert calls.bases == [first, second]  # one attempt per process, none to a dead one
    assert sleeps == []  # no backoff either
    assert len(said) == 1 and "restarting it once" in said[0]


def test_the_first_death_restarts_the_server_and_asks_the_question_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, sleeps, said = Calls(monkeypatch), [], []
    model = get_model("qwen2.5-coder-0.5b")
    marker = tmp_path / "died"
    server = LocalServer(
        model,
        tmp_path / "m.gguf",
        log_dir=tmp_path,
        command=lambda port: [*standin("segv-once")(port), str(marker)],
    )
    with server:
        first = server.api_base
        answer = served(server, sleeps, said).complete(REQUEST)
        assert server.api_base != first and server.death() is None
        assert served(server, sleeps, said).complete(REQUEST).text == "ready"
    assert answer.text == "ready" and marker.exists()
    assert calls.bases == [first, server.api_base, server.api_base] and sleeps == []
    assert len(said) == 1 and "was killed by signal SIGSEGV" in said[0]


@pytest.mark.parametrize("managed", [True, False])
def test_a_managed_servers_timeout_is_not_asked_again(
    managed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server goes on generating a reply whose client timed out (llama-cpp-python's
    does: a 1.5B model's 4,095-token OpenIE reply took it 23 minutes, and the retry then made
    it again): a timed-out request to a server chainrag manages is final, with what to do. An
    endpoint chainrag does not manage is asked again, as before."""
    litellm, calls, sleeps = import_litellm(), [], []

    def completion(**kwargs: object) -> object:
        calls.append(kwargs["timeout"])
        raise TimeoutError("read timed out")

    monkeypatch.setattr(litellm, "completion", completion)
    backend = LiteLLMBackend(api_base="http://127.0.0.1:9/v1", api_key="unused", timeout_s=600,
                             retry=RetryPolicy(max_retries=3), free=True, sleep=sleeps.append,
                             gone=(lambda: None) if managed else None)  # fmt: skip
    with pytest.raises(LLMTimeoutError) as caught:
        backend.complete(REQUEST)
    if managed:
        assert isinstance(caught.value, LocalTimeoutError) and not caught.value.retryable
        assert calls == [600] and sleeps == []
        assert str(caught.value).startswith(
            "the local LLM server did not answer 'sub_answer' within llm.timeout_s 600 s; not "
            "asked again, since the server goes on generating that reply (up to max_tokens 8)"
        )
        assert "--set llm.timeout_s=1200" in str(caught.value)
    else:
        assert not isinstance(caught.value, LocalTimeoutError)
        assert len(calls) == 4 and len(sleeps) == 3
