"""A remote model's endpoint: what answers (one identity rule, in the response cache's key), how
it is reached (``api_base``, ``concurrency``, ``timeout_s``, ``max_retries``: out of the
recipe's digest, recorded per session, a resume where one changed says so and goes on), and a
connection to it that fails said for what it is, with its URL. Every endpoint is the stand-in
server on 127.0.0.1 (or a port nobody listens on)."""

from __future__ import annotations

import errno
import json
import re
import socket
from pathlib import Path

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.endpoint import ACCESS_FIELDS, endpoint_identity, normal_base
from chainrag.core.errors import LLMConnectionError, LLMTimeoutError, RecipeError
from chainrag.core.types import LLMRequest, Message
from chainrag.llm import endpoint_identity as llm_identity
from chainrag.llm.backend import (
    LiteLLMBackend,
    RetryPolicy,
    connection_failure,
    connection_words,
)
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import LLMSpec
from chainrag.run.files import RunError
from chainrag.run.folder import RunDir, access_change
from chainrag.run.meta import recipe_digest
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT
from .test_runs import DATA, naive_recipe

ANSINT = ROOT / "recipes" / "chainrag" / "ansint.yaml"


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("HTTP://alice:pw@Host.Example:80/v1/", "http://host.example/v1"),
        ("https://host:443/v1", "https://host/v1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://[::1]:8000/v1/", "http://[::1]:8000/v1"),
    ],
)
def test_an_endpoint_is_its_url_normalised_without_credentials(url: str, normal: str) -> None:
    assert normal_base(url) == normal
    assert endpoint_identity("litellm", "openai/m", url) == f"litellm:openai/m@{normal}"


def test_one_identity_rule_for_the_llm_and_any_remote_model() -> None:
    spec = LLMSpec(kind="litellm", model="openai/m", api_base="http://u:p@127.0.0.1:8000/v1/")
    assert llm_identity(spec) == endpoint_identity("litellm", "openai/m", spec.api_base)
    assert llm_identity(spec) == "litellm:openai/m@http://127.0.0.1:8000/v1"  # as cached before
    assert endpoint_identity("litellm", "openai/m", None) == "litellm:openai/m@provider-default"
    params = endpoint_identity("litellm", "openai/m", None, {"top_p": 0.9, "extra_body": {"a": 1}})
    assert params.endswith('+params:{"extra_body":{"a":1},"top_p":0.9}')
    assert endpoint_identity("litellm", "openai/m", None, {}) == "litellm:openai/m@provider-default"


def test_how_the_endpoint_is_reached_is_not_part_of_the_digest() -> None:
    shipped = load_changed(ANSINT, llm="gpt-4o-mini")
    changes = ["llm.api_base=http://127.0.0.1:9999/v1", "llm.concurrency=32",
               "llm.timeout_s=5", "llm.max_retries=0"]  # fmt: skip
    moved = load_changed(ANSINT, parse_all(changes), llm="gpt-4o-mini")
    assert [getattr(moved.llm, f) for f in ACCESS_FIELDS] == ["http://127.0.0.1:9999/v1", 32,
                                                              5.0, 0, None]  # fmt: skip
    assert recipe_digest(moved) == recipe_digest(shipped)
    other = load_changed(ANSINT, parse_all(["llm.temperature=0"]), llm="gpt-4o-mini")
    assert recipe_digest(other) != recipe_digest(shipped)


def run_args(recipe: Path, api_base: str, out: Path, *more: str) -> list[str]:
    return ["run", str(recipe), "--dataset", "musique", "--limit", "3", "--out-dir", str(out),
            "--no-report", "--api-base", api_base, *more]  # fmt: skip


def test_a_run_resumes_with_its_server_on_another_port_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    recipe, _ = naive_recipe(tmp_path, "llm: {kind: litellm, model: openai/m}\n")
    runner, out = CliRunner(), tmp_path / "runs"
    first_server, second_server = FakeOpenAI(["500"], reply="Paris"), FakeOpenAI([], reply="Paris")
    with serve(first_server) as first, serve(second_server) as second:
        failed = runner.invoke(app, run_args(recipe, first, out, "--set", "llm.max_retries=0"))
        assert "2 answered, 1 failed" in failed.output  # one question left to resume
        plan = runner.invoke(app, run_args(recipe, second, out, "--concurrency", "2", "--dry-run"))
        assert plan.exit_code == 0, plan.output
        assert "resumes: 2 of 3 answered" in plan.output and "max_retries 4 (was 0)" in plan.output
        resumed = runner.invoke(app, run_args(recipe, second, out))
        assert resumed.exit_code == 0, resumed.output
    folder = out / "musique" / "naive"
    said = [line for line in resumed.output.splitlines() if line.startswith("note:")]
    assert said == [
        f"note: {folder} resumes with llm api_base {second} (was {first}), max_retries 4 (was "
        "0): how the LLM is reached changes no answer, so the run goes on (run.json records "
        "each session's)"
    ]
    assert "1 answered, 2 already done" in resumed.output and len(second_server.bodies) == 1
    sessions = json.loads((folder / "run.json").read_text())["sessions"]
    assert [s["access"]["api_base"] for s in sessions] == [first, second]
    assert sessions[1]["access"] == {"api_base": second, "concurrency": 1, "timeout_s": 120.0,
                                     "max_retries": 4}  # fmt: skip
    moved = {**sessions[1]["access"], "api_base": None, "concurrency": 8}
    assert access_change(folder, sessions[1]["access"], moved).startswith(
        f"note: {folder} resumes with llm api_base unset (was {second}), concurrency 8 (was 1):"
    )


def test_the_response_cache_keeps_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same recipe and questions at another address: the run folder resumes, but a new one
    asks the other server, whose answers the first server's never stand for."""
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    recipe, _ = naive_recipe(tmp_path, "llm: {kind: litellm, model: openai/m}\n")
    a, b = FakeOpenAI([], reply="Paris"), FakeOpenAI([], reply="Paris")
    with serve(a) as first, serve(b) as second:
        assert CliRunner().invoke(app, run_args(recipe, first, tmp_path / "a")).exit_code == 0
        assert CliRunner().invoke(app, run_args(recipe, second, tmp_path / "b")).exit_code == 0
    assert len(a.bodies) == 3 and len(b.bodies) == 3


def test_a_refusal_to_resume_names_the_fields_that_differ(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    run = RunDir(tmp_path / "run")
    run.folder.mkdir()
    run.start(recipe, path, "musique", DATA)
    seeds = attrs.evolve(recipe.retrieval.seed, k=2)
    other = attrs.evolve(recipe, retrieval=attrs.evolve(recipe.retrieval, seed=seeds),
                         llm=attrs.evolve(recipe.llm, temperature=0.0))  # fmt: skip
    with pytest.raises(RunError, match=r"holds a run of another recipe \('naive'\), which differs "
                       r"in llm\.temperature: 0\.2 then, 0\.0 now; retrieval\.seed\.k: 5 then, "
                       r"2 now: pass another --out-dir") as caught:  # fmt: skip
        run.check(other, "musique", DATA)
    assert "sha256:" not in str(caught.value)
    (run.folder / "recipe.yaml").unlink()  # nothing to compare with: the digests, said so
    with pytest.raises(RunError, match=r"recipe\.yaml cannot be read to say which fields differ"):
        run.check(other, "musique", DATA)


# --------------------------------------------------------------------------- connection errors


def free_port() -> int:
    """A port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ask(backend: LiteLLMBackend) -> None:
    backend.complete(LLMRequest((Message("user", "hi"),), prompt_id="p", model="openai/m"))


def test_a_refused_connection_names_the_url_and_says_refused() -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    backend = LiteLLMBackend(api_base=base, api_key="k", retry=RetryPolicy(0))
    with pytest.raises(LLMConnectionError, match=rf"^{re.escape(base)}/chat/completions: "
                       r"connection refused \(\[Errno 111\] Connection refused\); is a server "
                       r"listening at that address and port\?") as caught:  # fmt: skip
        ask(backend)
    assert "InternalServerError" not in str(caught.value)


def test_a_timed_out_request_names_the_url_and_the_timeout() -> None:
    with serve(FakeOpenAI(["timeout"], hang_s=3)) as base:
        backend = LiteLLMBackend(api_base=base, api_key="k", retry=RetryPolicy(0), timeout_s=0.5)
        with pytest.raises(LLMTimeoutError, match=rf"^{re.escape(base)}/chat/completions: "
                           r"timed out after 0\.5 s \["):  # fmt: skip
            ask(backend)


def raised(error: BaseException, *, outer: str = "Connection error.") -> Exception:
    """``error`` as litellm raises it: wrapped in the OpenAI client's error, wrapped again."""
    try:
        try:
            raise error
        except BaseException as inner:
            raise ConnectionError(outer) from inner
    except ConnectionError as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (socket.gaierror(-2, "Name or service not known"),
         "unreachable: its host name could not be resolved ([Errno -2] Name or service not known)"),
        (OSError(errno.ENETUNREACH, "Network is unreachable"),
         "unreachable: network is unreachable ([Errno 101] Network is unreachable)"),
        (ConnectionRefusedError(111, "Connection refused"), "connection refused ([Errno 111]"),
        (TimeoutError("timed out"), "timed out after 30 s"),
        (ConnectionResetError(104, "Connection reset by peer"),
         "unreachable ([Errno 104] Connection reset by peer)"),
    ],
)  # fmt: skip
def test_a_connection_failure_is_said_for_what_it_is(error: BaseException, words: str) -> None:
    exc = raised(error)
    assert connection_words(exc, 30.0).startswith(words)
    assert connection_failure(exc, "http://host:8000/v1", 30.0).startswith(
        f"http://host:8000/v1: {words}"
    )
    assert connection_failure(exc, None, 30.0).startswith("the provider's endpoint: ")


# --------------------------------------------------------------------------- params, api_key_env


def test_further_litellm_keywords_pass_through_and_are_part_of_what_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    recipe, _ = naive_recipe(tmp_path, "llm: {kind: litellm, model: openai/m}\n")
    fake = FakeOpenAI([], reply="Paris")
    params = ["--set", "llm.params={top_p: 0.9, extra_body: {top_k: 20}, stop: [END]}"]
    with serve(fake) as base:
        plain = CliRunner().invoke(app, run_args(recipe, base, tmp_path / "a"))
        assert plain.exit_code == 0, plain.output
        assert all("top_p" not in body for body in fake.bodies)
        tuned = CliRunner().invoke(app, run_args(recipe, base, tmp_path / "b", *params))
        assert tuned.exit_code == 0, tuned.output
    sent = fake.bodies[3:]  # not answered from the first run's cache: another identity
    assert len(sent) == 3
    assert all(b["top_p"] == 0.9 and b["top_k"] == 20 and b["stop"] == ["END"] for b in sent)
    stored = (tmp_path / "b" / "musique" / "naive" / "recipe.yaml").read_text()
    assert "  params:\n    top_p: 0.9\n" in stored
    unset = load_changed(recipe)
    assert recipe_digest(load_changed(recipe, parse_all(params[1:]))) != recipe_digest(unset)
    spec = attrs.evolve(unset.llm, params={"top_p": 0.9})
    assert llm_identity(spec).endswith('+params:{"top_p":0.9}')
    assert llm_identity(unset.llm) == "litellm:openai/m@provider-default"  # unset: as before


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ("{temperature: 0}", r"temperature is set by llm\.temperature, not by llm\.params"),
        ("{api_key: sk-x}", r"api_key is set by llm\.api_key_env \(the name of the variable"),
        ("{timeout: 5}", r"timeout is set by llm\.timeout_s"),
    ],
)
def test_a_keyword_chainrag_sets_itself_is_refused_naming_its_field(params: str, why: str) -> None:
    with pytest.raises(RecipeError, match=why):
        load_changed(ANSINT, parse_all([f"llm.params={params}"]))


def test_the_key_is_read_from_the_variable_the_recipe_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    recipe, _ = naive_recipe(tmp_path, "llm: {kind: litellm, model: openai/m}\n")
    fake = FakeOpenAI([], key="sk-vllm-secret", reply="Paris")
    named = ["--set", "llm.api_key_env=VLLM_API_KEY"]
    with serve(fake) as base:
        unset = CliRunner().invoke(app, run_args(recipe, base, tmp_path / "runs", *named))
        assert unset.exit_code == 1
        assert "openai/m needs its key in VLLM_API_KEY (llm.api_key_env), and it is not set" in (
            unset.output
        )
        monkeypatch.setenv("VLLM_API_KEY", "sk-vllm-secret")
        done = CliRunner().invoke(app, run_args(recipe, base, tmp_path / "runs", *named))
    assert done.exit_code == 0, done.output
    assert "3 answered" in done.output and len(fake.bodies) == 3
    folder = tmp_path / "runs" / "musique" / "naive"
    written = "".join(p.read_text() for p in folder.iterdir() if p.is_file())
    assert "api_key_env: VLLM_API_KEY" in written and "sk-vllm-secret" not in written
    with pytest.raises(
        RecipeError, match="names the environment variable that holds the key"
    ) as caught:
        load_changed(ANSINT, parse_all(["llm.api_key_env=sk-vllm-secret-pasted"]))
    assert "pasted" not in str(caught.value)
