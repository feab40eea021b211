"""``chainrag standin``: the stand-in OpenAI-compatible server as a command a user runs to try a
set-up without paying — its start-up output, a key, a provider's rate, a log of one line a
request — with a run of chainrag against it, in a process of its own as a user starts it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.standin.process import parse_latency, parse_pair

from .conftest import ROOT
from .test_runs import naive_recipe


@contextmanager
def standin(tmp_path: Path, *options: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``chainrag standin --port 0 OPTIONS`` in its own process; yields its URL and process."""
    port_file = tmp_path / "port"
    args = [sys.executable, "-m", "chainrag.cli", "standin", "--port", "0",
            "--port-file", str(port_file), *options]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (port_file.is_file() and port_file.read_text()):
            assert process.poll() is None and time.monotonic() < deadline, process.stdout
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1", process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_user_tries_a_recipe_a_key_and_a_pace_against_the_standin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-try")
    recipe, _ = naive_recipe(tmp_path)
    log = tmp_path / "requests.jsonl"
    with standin(tmp_path, "--key", "sk-try", "--rate", "3:1", "--log", str(log)) as (url, server):
        args = ["run", str(recipe), "--dataset", "musique", "--limit", "4", "--no-report",
                "--out-dir", str(tmp_path / "runs"), "--llm", "openai/stand-in",
                "--api-base", url, "--set", "llm.max_retries=8"]  # fmt: skip
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
        assert "4 answered" in done.output and "failed" not in done.output
        server.terminate()
        said = server.communicate(timeout=30)[0]
    assert said.splitlines()[:2] == [
        f"stand-in OpenAI-compatible server at {url} (Ctrl-C stops it)",
        "  replies  chainrag's prompts answered deterministically (JSON where a schema is asked); "
        "nothing is paid, nothing leaves this machine",
    ]
    for line in ("  key      Bearer sk-try asked (401 otherwise)",
                 "  rate     3 requests a 1 s window, then 429 with Retry-After",
                 f"  log      {log} (one JSON line a request)",
                 f"  OPENAI_API_KEY=sk-try chainrag run RECIPE --dataset musique --limit 3 "
                 f"--llm openai/stand-in --api-base {url}"):  # fmt: skip
        assert line in said.splitlines()
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    what = [r["what"] for r in requests]
    assert what[0] == "probe" and what.count("ok") == 4  # one line a request, 429s included
    assert len(requests) == 1 + 4 + what.count("rate")
    assert all(r["model"] == "stand-in" and r["prompt_chars"] > 0 for r in requests)
    assert "sk-try" not in log.read_text()


def test_a_wrong_key_is_refused_as_a_provider_refuses_it(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    with standin(tmp_path, "--key", "sk-right") as (url, _):
        ask = urllib.request.Request(f"{url}/chat/completions", data=b'{"messages": []}',
                                     headers={"Authorization": "Bearer sk-wrong"})  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(ask, timeout=30)
        # The body is read while the stand-in still runs: the headers can reach us before
        # the body is written, and a stopped server never writes it.
        refusal = caught.value.read()
    assert caught.value.code == 401
    assert b"Incorrect API key provided" in refusal


@pytest.mark.parametrize(
    ("option", "why"),
    [
        (["--rate", "five"], "'five': expected N:WINDOW, two positive numbers"),
        (["--rate", "2.5:1"], "N, the requests a window, is a whole number"),
        (["--latency", "lognormal:5:1"], "expected S, fixed:S or lognormal:MEDIAN:P99"),
        (["--bursts", "60"], "'60': expected EVERY_S:FOR_S"),
    ],
)
def test_a_wrong_option_is_refused_with_its_form(option: list[str], why: str) -> None:
    refused = CliRunner().invoke(app, ["standin", *option])
    assert refused.exit_code == 2 and why in refused.output


def test_a_port_in_use_is_said_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = CliRunner().invoke(app, ["standin", "--port", str(port)])
    assert refused.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use; --port N" in (
        refused.output
    )


def test_latencies_and_pairs_read_as_the_help_says() -> None:
    assert parse_latency("0.5")() == 0.5 and parse_latency("fixed:2")() == 2.0
    assert 0 < parse_latency("lognormal:1:5")() < 60
    assert parse_pair("60:2", "EVERY_S:FOR_S") == (60.0, 2.0)
    with pytest.raises(ValueError, match=r"'-1': expected S, fixed:S"):
        parse_latency("-1")
    with pytest.raises(ValueError, match=r"'0:1': expected N:WINDOW, two positive numbers"):
        parse_pair("0:1", "N:WINDOW")
