"""A stand-in for llama_cpp.server: ``python standin_server.py PORT MODE``.

MODE ``ok`` answers GET /v1/models; ``crash`` exits with code 3 at once; ``silent`` never listens;
``stubborn`` answers like ``ok`` but ignores SIGTERM, as llama.cpp's server does while it finishes
a completion in flight (uvicorn's graceful shutdown).
"""

from __future__ import annotations

import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"object": "list", "data": [{"id": "standin"}]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    port, mode = int(sys.argv[1]), sys.argv[2]
    print(f"stand-in starting in mode {mode}", flush=True)
    if mode == "crash":
        print("fatal: cannot load model", flush=True)
        sys.exit(3)
    if mode == "silent":
        time.sleep(3600)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    HTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
