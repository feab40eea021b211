"""A stand-in for llama_cpp.server: ``python standin_server.py PORT MODE [MARKER]``.

MODE ``ok`` answers GET /v1/models and every chat completion; ``crash`` exits with code 3 at
once; ``silent`` never listens; ``stubborn`` answers like ``ok`` but ignores SIGTERM, as
llama.cpp's server does while it finishes a completion in flight (uvicorn's graceful shutdown).
Three modes die of SIGSEGV on a completion, as a llama.cpp build that cannot run on the CPU
does: ``segv-probe`` on the first (the start-up check); ``segv-after-probe`` on every one after
the first; ``segv-once`` on the second, only while the file MARKER does not exist (it makes it
first), so the server started after that death answers everything. ``oom-probe`` takes some
memory and is killed by SIGKILL on the first completion, as the kernel's out-of-memory killer
kills a server whose start-up check needs more memory than the machine has.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

MODE = ""
MARKER: Path | None = None
COMPLETIONS = 0


def dies_now() -> bool:
    """Whether this completion (number COMPLETIONS, from 1) is the one the mode dies on."""
    if MODE == "segv-probe":
        return True
    if MODE == "segv-after-probe":
        return COMPLETIONS > 1
    if MODE == "segv-once" and COMPLETIONS > 1 and MARKER is not None and not MARKER.exists():
        MARKER.write_text("died once\n")
        return True
    return False


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "standin"}]})

    def do_POST(self) -> None:
        global COMPLETIONS
        COMPLETIONS += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        print(f"completion {COMPLETIONS}", flush=True)
        if MODE == "oom-probe":
            held = bytearray(64 * 2**20)  # resident: a peak the start can name
            held[::4096] = b"x" * len(held[::4096])
            print("llama_kv_cache: allocating (stand-in)", flush=True)
            time.sleep(1.0)  # the kernel takes a moment to pick its victim
            os.kill(os.getpid(), signal.SIGKILL)
        if dies_now():
            print("ggml: general protection fault (stand-in)", flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        self._send({
            "id": "chatcmpl-standin", "object": "chat.completion", "created": 0,
            "model": "standin",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ready"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 1, "total_tokens": 301},
        })  # fmt: skip

    def _send(self, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    global MODE, MARKER
    port, MODE = int(sys.argv[1]), sys.argv[2]
    MARKER = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    print(f"stand-in starting in mode {MODE}", flush=True)
    if MODE == "crash":
        print("fatal: cannot load model", flush=True)
        sys.exit(3)
    if MODE == "silent":
        time.sleep(3600)
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    HTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
