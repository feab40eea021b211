"""The managed server's life cycle, with a stand-in process (the real one: integration test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chainrag.core.errors import ServerError
from chainrag.llm.server import LocalServer, crowding, running_servers, server_command
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
