"""A remote model's endpoint: what answers (one identity rule, in the response cache's key) and
how it is reached (``api_base``, ``concurrency``, ``timeout_s``, ``max_retries``: out of the
recipe's digest, recorded per session, a resume where one changed says so and goes on). Every
endpoint is the stand-in server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.endpoint import ACCESS_FIELDS, endpoint_identity, normal_base
from chainrag.llm import endpoint_identity as llm_identity
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import LLMSpec
from chainrag.run.files import RunError
from chainrag.run.folder import RunDir
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
                                                              5.0, 0]  # fmt: skip
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
