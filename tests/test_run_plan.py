"""One plan per run (issue 47, item 10): ``chainrag run``'s recipes, datasets, folders and
corpus index are read and checked once into a typed :class:`~chainrag.run.plan.RunPlan`, which
the dry run prints and the run and the estimate execute without reading them again; a run the
plan refuses stops the command before any run starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import chainrag.run.meta as meta
from chainrag.cli.main import app
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import RunError
from chainrag.run.jobs import run_grid
from chainrag.run.plan import FolderState, RunPlan, plan_grid, plan_lines
from chainrag.standin.server import FakeOpenAI, serve

from .test_runs import naive_recipe


@pytest.fixture
def served() -> Iterator[tuple[FakeOpenAI, str]]:
    """The fake OpenAI server, replying "Paris", and its address."""
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        yield fake, api_base


def two_recipes(tmp_path: Path, api_base: str) -> list[Path]:
    """NaiveRAG twice (``naive`` and ``naive_k2``), answered by the fake server."""
    llm = (
        f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}', "
        "max_retries: 0}\n"
    )
    first, _ = naive_recipe(tmp_path, llm, name="naive")
    second, _ = naive_recipe(tmp_path, llm + "retrieval: {seed: {k: 2}}\n", name="naive_k2")
    return [first, second]


def test_the_plan_reads_each_dataset_file_once_and_the_run_reads_none_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fingerprinted: list[Path] = []
    digested: list[str] = []
    fingerprint, digest = meta.file_fingerprint, meta.recipe_digest

    def counted_fingerprint(path: Path) -> str:
        fingerprinted.append(path)
        return fingerprint(path)

    def counted_digest(recipe: Recipe) -> str:
        digested.append(recipe.name)
        return digest(recipe)

    monkeypatch.setattr(meta, "file_fingerprint", counted_fingerprint)
    monkeypatch.setattr(meta, "recipe_digest", counted_digest)
    fake = FakeOpenAI([], reply="Paris")
    with serve(fake) as api_base:
        recipes = two_recipes(tmp_path, api_base)
        plan = plan_grid(recipes, ["musique", "2wiki"], out=tmp_path / "runs", limit=2)
        assert isinstance(plan, RunPlan) and len(plan.runs) == 4
        assert len(fingerprinted) == 2  # one per dataset, whatever the recipes
        assert sorted(digested) == ["naive", "naive", "naive_k2", "naive_k2"]  # one per run
        assert [r.state for r in plan.runs] == [FolderState("new", 2)] * 4
        results = run_grid(plan)
    assert len(fingerprinted) == 2 and len(digested) == 4  # the run read nothing again
    assert [r.folder for r in results] == [r.folder for r in plan.runs]
    assert len(fake.bodies) == 8
    for run in plan.runs:
        stored = json.loads((run.folder / "run.json").read_text())
        assert stored["dataset_fingerprint"] == run.identity.dataset_fingerprint
        assert stored["recipe_digest"] == run.identity.recipe_digest


def test_a_refused_second_run_stops_the_command_before_the_first_starts(
    tmp_path: Path, served: tuple[FakeOpenAI, str]
) -> None:
    fake, api_base = served
    first, second = two_recipes(tmp_path, api_base)
    out = tmp_path / "runs"
    run_grid(plan_grid([second], ["musique"], out=out, limit=1))
    calls = len(fake.bodies)
    # naive_k2's folder now holds another recipe under naive_k2's name: a new file of it
    # without the change, so the grid's second run is refused
    second.write_text(second.read_text().replace("retrieval: {seed: {k: 2}}\n", ""))
    plan = plan_grid([first, second], ["musique"], out=out, limit=1)
    assert [r.state.kind for r in plan.runs] == ["new", "refused"]
    lines = plan_lines(plan)
    assert "  new: 1 to answer" in lines
    assert any(line.startswith("  refused: ") and "another recipe" in line for line in lines)
    with pytest.raises(RunError, match="holds a run of another recipe"):
        run_grid(plan)
    args = ["run", str(first), str(second), "--dataset", "musique", "--limit", "1"]
    dry = CliRunner().invoke(app, [*args, "--out-dir", str(out), "--dry-run"])
    assert dry.exit_code == 1, dry.output  # a dry run of a command that would be refused
    assert "  refused: " in dry.output
    assert "pass another --out-dir, or remove that directory" in dry.output
    assert len(fake.bodies) == calls  # nothing was asked
    assert not (out / "musique" / "naive").exists()  # the first run was not started


def test_two_refused_runs_are_named_together(
    tmp_path: Path, served: tuple[FakeOpenAI, str]
) -> None:
    recipes = two_recipes(tmp_path, served[1])
    out = tmp_path / "runs"
    run_grid(plan_grid(recipes, ["musique"], out=out, limit=1))
    for path in recipes:  # another embedder: another recipe under each name
        path.write_text(path.read_text().replace("dim: 64", "dim: 32"))
    plan = plan_grid(recipes, ["musique"], out=out, limit=1)
    with pytest.raises(RunError, match="2 runs would be refused") as refused:
        plan.check()
    assert "musique/naive: " in str(refused.value) and "musique/naive_k2: " in str(refused.value)


def test_a_resumed_plan_counts_what_is_done(tmp_path: Path, served: tuple[FakeOpenAI, str]) -> None:
    first, _ = two_recipes(tmp_path, served[1])
    out = tmp_path / "runs"
    run_grid(plan_grid([first], ["musique"], out=out, limit=2))
    more = plan_grid([first], ["musique"], out=out, limit=3)
    assert more.runs[0].state == FolderState("resumes", 3, 2)
    assert str(more.runs[0].state) == "resumes: 2 of 3 answered, 1 to answer"
    same = plan_grid([first], ["musique"], out=out, limit=2)
    assert str(same.runs[0].state) == "complete: 2 of 2 answered, nothing to do"


def test_the_llm_and_the_remote_encoders_are_checked_at_once_the_first_refusal_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each check waits on its endpoint; in turn a run's start waited for their sum. Each of
    the three checks here returns only once all three are under way (else the barrier breaks),
    and the error raised is the first one in order (the embedder's, not the reranker's)."""
    import threading

    from chainrag.components.index.remote_embedders import LiteLLMEmbedder
    from chainrag.components.retrieval.remote_rerankers import LiteLLMReranker
    from chainrag.core.errors import LLMUnavailableError
    from chainrag.run import preflight
    from chainrag.run.preflight import check_plan

    path, _ = naive_recipe(tmp_path)
    changes = ["index.embedder={kind: litellm, model: openai/e, dimensions: 8, api_base: "
               "'http://127.0.0.1:9/v1'}", "retrieval.seed.reranker={kind: litellm, model: "
               "cohere/r, api_base: 'http://127.0.0.1:9/v1'}"]  # fmt: skip
    plan = plan_grid([path], ["musique"], out=tmp_path / "runs", limit=1, llm="openai/x",
                     overrides=changes, cache_mode="bypass")  # fmt: skip
    together = threading.Barrier(3, timeout=30)
    checked: list[str] = []

    def check(name: str, error: str = "") -> None:
        together.wait()
        checked.append(name)
        if error:
            raise LLMUnavailableError(error)

    monkeypatch.setattr(preflight, "check_llm", lambda spec, call: check(spec.model))
    for cls, error in ((LiteLLMEmbedder, "embedder refused"), (LiteLLMReranker, "reranker")):
        monkeypatch.setattr(cls, "stored_before", lambda self: False)
        monkeypatch.setattr(cls, "check_endpoint",
                            lambda self, call, e=error, n=cls.__name__: check(n, e))  # fmt: skip
    with pytest.raises(LLMUnavailableError, match="embedder refused"):
        check_plan(plan)
    assert sorted(checked) == ["LiteLLMEmbedder", "LiteLLMReranker", "openai/x"]
