"""``chainrag run --estimate`` (issue 22, item 4): calls, tokens, dollars and wall time of a run
scaled up from a sample (or from the run folder's answered questions), on the scripted LLM
whose token counts are known, so that the expected totals are exact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.types import LLMRequest, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.llm.backend import TokenPrice, token_price
from chainrag.llm.cache import CachedLLM, ResponseCache
from chainrag.llm.fake import ScriptedLLM
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import Recipe
from chainrag.run.estimate import (
    Estimate,
    EstimateError,
    Spread,
    estimate_run,
    mean_interval,
    sample_questions,
    table,
    wall_seconds,
)
from chainrag.run.files import RunError
from chainrag.run.jobs import Job
from chainrag.run.plan import PlannedData, plan_run
from chainrag.run.session import run_recipe

from .fake_openai_server import FakeOpenAI, serve
from .test_runs import naive_recipe, start

GPT_4O_MINI = TokenPrice(0.15e-6, 0.6e-6)
"""gpt-4o-mini's price in the map of the pinned litellm: $0.15 / $0.60 per million tokens."""


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test its own estimate folders (they are kept under $CHAINRAG_CACHE)."""
    monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- the arithmetic


def test_the_mean_carries_its_95_percent_interval() -> None:
    assert mean_interval([4.0]) == Spread(4.0, 4.0, 4.0)  # one question: no interval
    assert mean_interval([3.0, 3.0, 3.0]) == Spread(3.0, 3.0, 3.0)
    spread = mean_interval([1.0, 2.0, 3.0])  # sd 1, t(0.975, 2) = 4.3027
    assert spread.mean == 2.0
    assert spread.high == pytest.approx(2.0 + 4.302653 / 3**0.5, rel=1e-6)
    assert spread.low == 0.0  # 2 - 2.48 is below 0: no figure here is negative
    with pytest.raises(ValueError, match="no values"):
        mean_interval([])


def test_wall_time_is_the_questions_over_the_concurrency_or_the_llm_queue() -> None:
    seconds, llm = Spread(10.0, 8.0, 12.0), Spread(6.0, 5.0, 7.0)
    # a provider: 4 questions and 4 requests in flight; the questions' seconds bound it
    assert wall_seconds(seconds, llm, 100, 4, 4) == Spread(250.0, 200.0, 300.0)
    # the managed local server answers one request at a time: its queue bounds it
    assert wall_seconds(seconds, llm, 100, 4, 1) == Spread(600.0, 500.0, 700.0)
    assert wall_seconds(seconds, llm, 100, 1, 1) == Spread(1000.0, 800.0, 1200.0)


def test_the_sample_is_seeded_in_dataset_order_and_grows_by_adding() -> None:
    examples = [
        QAExample(qid=str(i), dataset="toy", question=f"q{i}", answers=("a",)) for i in range(40)
    ]
    five = sample_questions(examples, 5)
    assert len(five) == 5 and five == sample_questions(examples, 5)
    assert [int(e.qid) for e in five] == sorted(int(e.qid) for e in five)
    assert five != examples[:5]  # drawn, not the first five
    assert set(map(id, five)) <= set(map(id, sample_questions(examples, 12)))
    assert sample_questions(examples, 100) == examples
    with pytest.raises(EstimateError, match="at least 1 question to answer, not 0"):
        sample_questions(examples, 0)


def test_prices_come_from_litellms_bundled_map() -> None:
    assert token_price("gpt-4o-mini") == GPT_4O_MINI
    assert token_price("openai/gpt-4o-mini") == GPT_4O_MINI
    assert token_price("openai/fake-model") is None
    assert GPT_4O_MINI.dollars(1_000_000, 1_000_000) == pytest.approx(0.75)


# --------------------------------------------------------------------------- on a dataset


def priced_recipe(tmp_path: Path, model: str = "gpt-4o-mini") -> tuple[Path, Recipe]:
    """The naive recipe answered by a litellm model (here always by the scripted LLM)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    return naive_recipe(tmp_path, f"llm: {{kind: litellm, model: {model}, concurrency: 4}}\n")


def words(request: LLMRequest) -> int:
    """The prompt tokens the scripted LLM counts for a request."""
    return sum(len(m.content.split()) for m in request.messages)


def never() -> LLM:
    raise AssertionError("the estimate asked for an LLM it did not need")


def estimate(
    recipe: Recipe,
    path: Path,
    tmp_path: Path,
    examples: list[QAExample],
    llm: Callable[[], LLM],
    sample: int,
) -> Estimate:
    job = Job(path, "musique", tmp_path / "runs", concurrency=None)
    planned = plan_run(job, recipe, PlannedData.read(job.dataset, examples))
    return estimate_run(attrs.evolve(planned, recipe_path=path), llm, sample=sample)


def test_a_sample_on_the_scripted_llm_gives_exact_totals(tmp_path: Path) -> None:
    path, recipe = priced_recipe(tmp_path)
    examples = load_dataset("musique", 8)
    llm = ScriptedLLM({"cxtint": ["Paris", "the Blue Nile", "1987"]})
    found = estimate(recipe, path, tmp_path, examples, lambda: llm, 3)
    assert len(llm.requests) == 3  # one call a question for naive
    prompt = sum(map(words, llm.requests))
    completion = 1 + 3 + 1  # "Paris", "the Blue Nile", "1987"
    assert found.questions == 8 and found.basis.kind == "sample" and found.basis.measured == 3
    assert found.calls == 8.0
    assert found.prompt_tokens == pytest.approx(8 * prompt / 3)
    assert found.completion_tokens == pytest.approx(8 * completion / 3)
    assert found.pricing == "litellm" and found.dollars is not None
    assert found.dollars.mean == pytest.approx(GPT_4O_MINI.dollars(8 * prompt / 3,
                                                                   8 * completion / 3))  # fmt: skip
    assert found.dollars.low < found.dollars.mean < found.dollars.high  # the replies differ
    assert (found.width, found.slots) == (4, 4)  # the recipe's llm.concurrency
    assert found.wall_s.mean > 0
    # the run is not started: its folder does not exist; the sample has a folder of its own
    assert not (tmp_path / "runs").exists()
    assert found.basis.folder.is_relative_to(tmp_path / "cache" / "estimates" / "musique")
    asked = {r.messages[-1].content for r in llm.requests}
    chosen = sample_questions(examples, 3)
    assert all(any(e.question in text for text in asked) for e in chosen)
    # asked again, the sample is read back: nothing is answered twice
    again = estimate(recipe, path, tmp_path, examples, never, 3)
    assert (again.calls, again.prompt_tokens, again.dollars) == (
        found.calls, found.prompt_tokens, found.dollars,
    )  # fmt: skip
    text = table([found])
    assert "| musique/naive | gpt-4o-mini | 8 | 8 |" in text
    assert "a sample of 3 question(s) answered one at a time" in text


def test_the_models_are_loaded_before_the_first_sampled_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's first question is timed after its index's and seeds' models are loaded
    into the store the session then uses (here a model-free embedder: the store stays empty),
    without an LLM call; not again when the sample is read back."""
    import chainrag.run.estimate as module
    from chainrag.core.context import ModelStore
    from chainrag.run.question import warm_up

    path, recipe = priced_recipe(tmp_path)
    examples = load_dataset("musique", 8)
    warmed: list[tuple[str, ModelStore]] = []

    def spy(recipe: Recipe, example: QAExample, models: ModelStore, index: object) -> None:
        warm_up(recipe, example, models, None)
        warmed.append((example.qid, models))

    sessions: list[ModelStore | None] = []
    run_into = module.run_into

    def recording(*args: object, models: ModelStore | None = None, **kwargs: object) -> object:
        sessions.append(models)
        return run_into(*args, models=models, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "warm_up", spy)
    monkeypatch.setattr(module, "run_into", recording)
    llm = ScriptedLLM({"cxtint": ["Paris", "the Blue Nile", "1987"]})
    estimate(recipe, path, tmp_path, examples, lambda: llm, 3)
    assert [qid for qid, _ in warmed] == [sample_questions(examples, 3)[0].qid]
    assert sessions == [warmed[0][1]] and len(llm.requests) == 3
    estimate(recipe, path, tmp_path, examples, never, 3)
    assert len(warmed) == 1 and len(sessions) == 1


def test_a_model_without_a_price_and_a_local_model(tmp_path: Path) -> None:
    examples = load_dataset("musique", 4)
    path, recipe = priced_recipe(tmp_path, "openai/fake-model")
    unknown = estimate(recipe, path, tmp_path, examples, lambda: ScriptedLLM({"cxtint": ["x"]}), 1)
    assert unknown.pricing == "unknown" and unknown.dollars is None
    assert unknown.calls == 4.0 and unknown.completion_tokens == 4.0
    assert "| unknown price |" in table([unknown])
    (tmp_path / "local").mkdir()
    local_path, local = naive_recipe(tmp_path / "local")  # the default: a managed local model
    reply = ScriptedLLM({"cxtint": ["x"]})
    free = estimate(local, local_path, tmp_path, examples, lambda: reply, 1)
    assert free.pricing == "local" and free.dollars == Spread(0.0, 0.0, 0.0)
    assert free.slots == 1  # the managed server answers one request at a time
    assert "| $0 (local) |" in table([free])


def test_a_run_that_answered_enough_is_read_instead_of_a_sample(tmp_path: Path) -> None:
    path, recipe = priced_recipe(tmp_path)
    examples = load_dataset("musique", 10)
    run = start(tmp_path, path, recipe, "runs/musique/naive")
    llm = ScriptedLLM({"cxtint": lambda _: "Paris"})
    run_recipe(recipe, examples[:4], run, llm)
    before = sorted(p.stat().st_mtime_ns for p in run.folder.iterdir())
    found = estimate(recipe, path, tmp_path, examples, never, 4)
    assert found.basis.kind == "run" and found.basis.measured == 4
    assert found.basis.folder == run.folder
    assert found.prompt_tokens == pytest.approx(10 * sum(map(words, llm.requests)) / 4)
    assert found.completion_tokens == 10.0
    assert sorted(p.stat().st_mtime_ns for p in run.folder.iterdir()) == before  # only read
    assert f"the 4 question(s) already answered in {run.folder}" in table([found])
    # fewer answered than the sample asks for: a sample is answered instead
    sampled = estimate(recipe, path, tmp_path, examples, lambda: llm, 5)
    assert sampled.basis.kind == "sample"


def test_questions_answered_from_the_cache_are_not_measured(tmp_path: Path) -> None:
    path, recipe = priced_recipe(tmp_path)
    examples = load_dataset("musique", 3)
    cache = ResponseCache(tmp_path / "llm.sqlite")
    scripted = ScriptedLLM({"cxtint": lambda _: "Paris"})
    run_recipe(recipe, examples, start(tmp_path, path, recipe, "first"), CachedLLM(scripted, cache))
    cached = start(tmp_path, path, recipe, "runs/musique/naive")
    run_recipe(recipe, examples, cached, CachedLLM(scripted, cache))  # every answer a hit
    assert all(r.usage.cache_hits for r in cached.records()[0])
    found = estimate(recipe, path, tmp_path, examples, lambda: scripted, 2)
    assert found.basis.kind == "sample"  # the run's questions have no tokens to measure
    assert found.completion_tokens == 3.0
    cache.close()


def test_a_run_folder_of_another_recipe_or_a_sample_that_failed_is_an_error(
    tmp_path: Path,
) -> None:
    examples = load_dataset("musique", 3)
    other_path, other = priced_recipe(tmp_path / "other", "gpt-4o")
    run_recipe(other, examples, start(tmp_path, other_path, other, "runs/musique/naive"),
               ScriptedLLM({"cxtint": lambda _: "Paris"}))  # fmt: skip
    path, recipe = priced_recipe(tmp_path)
    with pytest.raises(RunError, match="holds a run of another recipe"):
        estimate(recipe, path, tmp_path, examples, never, 2)
    failing = ScriptedLLM({})  # every call fails
    with pytest.raises(EstimateError, match=r"none of the 2 sampled question\(s\) was answered"):
        estimate(recipe, path, tmp_path / "elsewhere", examples, lambda: failing, 2)


# --------------------------------------------------------------------------- the command


def test_run_estimate_prints_the_table_and_starts_no_run(tmp_path: Path) -> None:
    """Through litellm to a fake OpenAI server that counts 7 prompt and 2 completion tokens a
    call, with gpt-4o-mini's price: 6 questions cost 42 x $0.15/M + 12 x $0.60/M."""
    fake = FakeOpenAI([], reply="Paris")
    runner = CliRunner()
    with serve(fake) as api_base:
        path, _ = naive_recipe(
            tmp_path, f"llm: {{kind: litellm, model: openai/gpt-4o-mini, api_base: '{api_base}'}}\n"
        )
        args = ["run", str(path), "--dataset", "musique", "--limit", "6", "--out",
                str(tmp_path / "runs"), "--estimate", "--sample", "2"]  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert len(fake.bodies) == 2
        again = runner.invoke(app, args)
        assert again.exit_code == 0 and len(fake.bodies) == 2  # the sample is kept
    dollars = GPT_4O_MINI.dollars(42, 12)
    assert f"| musique/naive | openai/gpt-4o-mini | 6 | 6 | 42 | 12 | ${dollars:.7f} |" in (
        result.output
    )
    assert "a sample of 2 question(s) answered one at a time" in result.output
    assert not (tmp_path / "runs").exists()
    alone = runner.invoke(app, ["run", str(path), "--dataset", "musique", "--sample", "2"])
    assert alone.exit_code == 2 and "--sample applies to --estimate only" in alone.output
