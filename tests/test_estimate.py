"""``chainrag run --estimate`` (issue 22, item 4): calls, tokens, dollars and wall time of a run
scaled up from a sample (or from the run folder's answered questions), on the scripted LLM
whose token counts are known, so that the expected totals are exact."""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.types import LLMRequest, Message, QAExample
from chainrag.data.datasets import load_dataset
from chainrag.llm.backend import TokenPrice, import_litellm, token_price
from chainrag.llm.cache import CachedLLM, ResponseCache
from chainrag.llm.fake import ScriptedLLM
from chainrag.llm.tokens import provider_tokenizer
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import Recipe
from chainrag.run.estimate import (
    Estimate,
    EstimateError,
    Spread,
    converted,
    estimate_run,
    mean_interval,
    sample_questions,
    table,
    wall_seconds,
)
from chainrag.run.files import RunError
from chainrag.run.folder import RunDir
from chainrag.run.jobs import Job
from chainrag.run.meta import LLMIdentity, RunIdentity
from chainrag.run.plan import PlannedData, plan_run
from chainrag.run.session import run_recipe
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import ROOT, need_model
from .test_runs import DATA, naive_recipe, start
from .test_scripts import _script as script

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


def estimate_recipe(
    recipe: Recipe,
    path: Path,
    job: Job,
    examples: list[QAExample],
    llm: Callable[[], LLM],
    **options: Any,
) -> Estimate:
    """``recipe`` planned over ``examples`` as a run would be, then estimated."""
    planned = plan_run(job, recipe, PlannedData.read(job.dataset, examples))
    return estimate_run(attrs.evolve(planned, recipe_path=path), llm, **options)


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

    def recording(*args: Any) -> object:
        sessions.append(args[-1].models)
        return run_into(*args)

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
    call (a question), with gpt-4o-mini's price: 6 questions cost 42 x $0.15/M + 12 x $0.60/M."""
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
    assert f"| musique/naive | openai/gpt-4o-mini | 6 | 6 | 7 | 2 | ${dollars:.7f} |" in (
        result.output
    )
    assert "a sample of 2 question(s) answered one at a time" in result.output
    assert not (tmp_path / "runs").exists()
    alone = runner.invoke(app, ["run", str(path), "--dataset", "musique", "--sample", "2"])
    assert alone.exit_code == 2 and "--sample applies to --estimate only" in alone.output


# --------------------------------------------------------------------------- without paying


def stored_local_run(
    tmp_path: Path, examples: list[QAExample], replies: dict[str, str], extra: str = ""
) -> tuple[RunDir, ScriptedLLM]:
    """A run of the naive recipe (``extra`` added) answered by the local model (scripted:
    ``replies`` by question) where docs/runs would hold it: ``shipped/musique/naive``."""
    folder = tmp_path / "local"
    folder.mkdir(parents=True, exist_ok=True)
    path, recipe = naive_recipe(folder, extra)
    assert recipe.llm.kind == "local_gguf"
    run = start(tmp_path, path, recipe, "shipped/musique/naive")
    llm = ScriptedLLM({"cxtint": lambda r: reply(replies, r)})
    run_recipe(recipe, examples, run, llm)
    return run, llm


def reply(replies: dict[str, str], request: LLMRequest) -> str:
    """The reply to the question ``request`` asks about."""
    return next(a for q, a in replies.items() if q in request.messages[-1].content)


def test_a_stored_run_of_the_recipe_prices_a_paid_model_without_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arithmetic on a tiny stored run: 3 questions answered by the local model, their
    tokens converted at a ratio of 0.5 and priced at gpt-4o-mini's price for a run of 4."""
    examples = load_dataset("musique", 4)
    answers = ["Paris", "the Blue Nile", "1987"]
    replies = dict(zip([e.question for e in examples[:3]], answers, strict=True))
    stored, local = stored_local_run(tmp_path, examples[:3], replies)
    asked = local.requests
    monkeypatch.setattr("chainrag.run.estimate.LOCAL_RATIO", {"o200k_base": 0.5})
    path, recipe = priced_recipe(tmp_path / "paid", "openai/gpt-4o-mini")
    job = Job(path, "musique", tmp_path / "runs", concurrency=None)
    found = estimate_recipe(recipe, path, job, examples, never, sample=2, pay=False,
                            roots=[tmp_path / "shipped"])  # fmt: skip
    prompt = [0.5 * words(next(r for r in asked if q in r.messages[-1].content)) for q in replies]
    completion = [0.5 * len(a.split()) for a in replies.values()]  # 0.5, 1.5, 0.5
    assert found.basis.kind == "run" and found.basis.folder == stored.folder
    assert found.basis.measured == 3 and found.basis.answered_by == "qwen2.5-coder-1.5b"
    assert found.calls == 4.0 and found.questions == 4
    assert found.prompt_each.mean == pytest.approx(sum(prompt) / 3)
    assert found.prompt_tokens == pytest.approx(4 * sum(prompt) / 3)
    assert found.completion_each.mean == pytest.approx(2.5 / 3)
    half = 4.302653 * statistics.stdev(completion) / 3**0.5  # t(0.975, 2 degrees of freedom)
    assert found.completion_each.high == pytest.approx(2.5 / 3 + half, rel=1e-6)
    spent = [GPT_4O_MINI.dollars(p, c) for p, c in zip(prompt, completion, strict=True)]
    assert found.dollars is not None
    assert found.dollars.mean == pytest.approx(4 * statistics.fmean(spent))
    assert found.dollars.high == pytest.approx(
        4 * (statistics.fmean(spent) + 4.302653 * statistics.stdev(spent) / 3**0.5), rel=1e-6
    )
    assert found.wall_s is None  # the local model's seconds are not gpt-4o-mini's
    text = table([found])
    assert "| musique/naive | openai/gpt-4o-mini | 4 | 4 |" in text and "| not measured |" in text
    assert (
        f"the 3 question(s) already answered by qwen2.5-coder-1.5b in {stored.folder}; tokens "
        "counted by qwen2.5-coder-1.5b's tokenizer, converted to openai/gpt-4o-mini's tokenizer "
        "(o200k_base, as litellm counts) at 0.500 tokens per token"
    ) in text
    assert not (tmp_path / "runs").exists()


def test_a_stored_run_of_another_recipe_is_not_used_and_the_local_model_answers_a_sample(
    tmp_path: Path,
) -> None:
    """Only the ``llm:`` may differ: a stored run retrieving 3 chunks instead of 5 is another
    recipe. The local model (scripted here) answers the sample, whose prompts and completions
    are counted with gpt-4o-mini's tokenizer; a stored run that differs only in its ``llm:``
    (its temperature) is then used."""
    examples = load_dataset("musique", 6)
    replies = {e.question: "the Blue Nile" for e in examples}
    other = (
        "retrieval: {seed: {kind: dense_rerank, candidates: 100, k: 3, reranker: {kind: none}}}\n"
    )
    stored_local_run(tmp_path / "a", examples[:3], replies, other)
    path, recipe = priced_recipe(tmp_path / "paid", "openai/gpt-4o-mini")
    local = ScriptedLLM({"cxtint": lambda r: reply(replies, r)}, model="qwen2.5-coder-1.5b")
    job = Job(path, "musique", tmp_path / "runs", concurrency=None)
    found = estimate_recipe(recipe, path, job, examples, lambda: local, sample=2, pay=False,
                            roots=[tmp_path / "a" / "shipped"])  # fmt: skip
    assert found.basis.kind == "sample" and found.basis.answered_by == "qwen2.5-coder-1.5b"
    assert len(local.requests) == 2
    tokenizer = provider_tokenizer("openai/gpt-4o-mini")
    assert (tokenizer.encoding, tokenizer.own) == ("o200k_base", True)
    counted = [tokenizer.messages(r.messages) for r in local.requests]
    assert counted != [words(r) for r in local.requests]
    assert found.prompt_each.mean == pytest.approx(statistics.fmean(counted))
    assert found.completion_each.mean == tokenizer.text("the Blue Nile")
    assert "counted by openai/gpt-4o-mini's tokenizer (o200k_base, as litellm counts) over the " \
           "texts of the sample" in table([found])  # fmt: skip
    # the sample answered by the local model is kept apart from its own estimate's
    assert found.basis.folder.is_relative_to(tmp_path / "cache" / "estimates")
    # a stored run of the same recipe but a temperature of 0.7 is the recipe's
    stored, _ = stored_local_run(tmp_path / "b", examples[:3], replies, "llm: {temperature: 0.7}\n")
    roots = [tmp_path / "a" / "shipped", tmp_path / "b" / "shipped"]
    again = estimate_recipe(recipe, path, job, examples, never, sample=2, pay=False, roots=roots)
    assert again.basis.folder == stored.folder and again.basis.measured == 3


def test_tokens_are_counted_with_the_models_own_tokenizer_where_litellm_has_it() -> None:
    mini = provider_tokenizer("openai/gpt-4o-mini")
    assert mini == provider_tokenizer("gpt-4o-mini").__class__(
        "openai/gpt-4o-mini", "o200k_base", True
    )
    assert provider_tokenizer("gpt-4").encoding == "cl100k_base"
    served = provider_tokenizer("ollama/qwen2.5:7b")
    assert (served.encoding, served.own) == ("cl100k_base", False)
    assert "standing in: litellm has no tokenizer of ollama/qwen2.5:7b offline" in str(served)
    # a model whose tokenizer litellm would download is counted offline by the stand-in
    llama = provider_tokenizer("together_ai/meta-llama/Llama-3-8b-chat-hf")
    assert (llama.encoding, llama.own) == ("cl100k_base", False)
    text = "Richland County, South Carolina: 县 in the U.S. state of South Carolina. " * 4
    import_litellm()  # its bundled encodings
    import tiktoken

    assert mini.text(text) == len(tiktoken.get_encoding("o200k_base").encode(text))
    assert mini.text(text) < provider_tokenizer("gpt-4").text(text) == served.text(text)
    assert mini.messages((Message("user", text),)) > mini.text(text)  # the message's overhead


def test_stored_runs_are_looked_for_in_the_out_dir_then_the_working_folder_then_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's project keeps its runs in docs/runs of the folder it works in, as the checkout
    does: ``--estimate`` finds them there when ``--out-dir`` has none, before the package's."""
    from chainrag.run.stored import stored_roots, stored_runs

    examples = load_dataset("musique", 4)
    replies = {e.question: "Paris" for e in examples}
    stored_local_run(tmp_path / "project", examples[:2], replies)
    package, _ = stored_local_run(tmp_path / "package", examples[:3], replies)
    (tmp_path / "project" / "docs").mkdir()
    (tmp_path / "project" / "shipped").rename(tmp_path / "project" / "docs" / "runs")
    monkeypatch.chdir(tmp_path / "project")
    roots = stored_roots(tmp_path / "runs", tmp_path / "package" / "shipped")
    assert roots == (tmp_path / "runs", tmp_path / "project" / "docs" / "runs",
                     tmp_path / "package" / "shipped")  # fmt: skip
    _, recipe = naive_recipe(tmp_path, "llm: {kind: litellm, model: openai/gpt-4o-mini}\n")
    identity = RunIdentity.of(recipe, "musique", DATA)
    found = stored_runs(recipe, identity, "musique", roots)
    here = tmp_path / "project" / "docs" / "runs" / "musique" / "naive"
    assert [r.folder for r in found] == [here, package.folder]  # the working folder's first,
    assert len(found[1].records) > len(found[0].records)  # though the package's has more


def test_a_stored_runs_counts_are_converted_only_from_the_local_tokenizer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mini = provider_tokenizer("openai/gpt-4o-mini")
    monkeypatch.setattr("chainrag.run.estimate.LOCAL_RATIO", {"o200k_base": 0.9})
    local = LLMIdentity("local_gguf", "qwen2.5-coder-1.5b")
    assert converted(local, mini)[0] == 0.9
    assert converted(LLMIdentity("litellm", "openai/gpt-4o-mini"), mini) == (
        1.0, "counted by openai/gpt-4o-mini when it answered",
    )  # fmt: skip
    factor, said = converted(LLMIdentity("litellm", "anthropic/claude-3-5-haiku"), mini)
    assert factor == 1.0 and said.startswith(
        "counted by anthropic/claude-3-5-haiku's tokenizer, not"
    )
    assert converted(local, provider_tokenizer("ollama/qwen2.5:7b"))[0] == 1.0  # no ratio for it


def test_run_estimate_without_yes_prints_dollars_and_calls_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--estimate`` for gpt-4o-mini (no server: any call would fail the test) reads the stored
    run of its recipe and prints tokens a question and the run's dollars; with --yes it would
    answer a paid sample."""
    examples = load_dataset("musique", 4)
    stored_local_run(tmp_path, examples[:3], {e.question: "Paris" for e in examples})
    monkeypatch.setattr("chainrag.run.estimate.SHIPPED_RUNS", tmp_path / "shipped")
    (tmp_path / "paid").mkdir()
    path, _ = naive_recipe(tmp_path / "paid", "llm: {kind: litellm, model: openai/gpt-4o-mini}\n")
    args = ["run", str(path), "--dataset", "musique", "--limit", "4", "--out-dir",
            str(tmp_path / "runs"), "--estimate"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    row = next(ln for ln in result.output.splitlines() if ln.startswith("| musique/naive"))
    assert row.startswith("| musique/naive | openai/gpt-4o-mini | 4 | 4 | ")
    assert "| $0.0" in row and "| not measured |" in row
    assert f"already answered by qwen2.5-coder-1.5b in {tmp_path / 'shipped'}" in result.output
    assert "No paid call was made" in result.output
    assert "would answer 4 sample question(s) with openai/gpt-4o-mini" in result.output
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- the measurements


def test_the_docs_figures_of_5_questions_against_30_are_the_scripts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/llm.md's table is what scripts/estimate_error.py prints on docs/runs; one run's
    figures recomputed here from its folder."""
    errors = script("estimate_error")
    errors.main([str(ROOT / "docs" / "runs")])
    printed = capsys.readouterr().out.strip()
    assert printed in (ROOT / "docs" / "llm.md").read_text()
    records = {r.id: r for r in RunDir(ROOT / "docs" / "runs" / "musique" / "naive").records()[0]}
    ordered = [records[e.qid] for e in load_dataset("musique", 30)]
    assert len(ordered) == 30 and all(r.usage.cache_hits == 0 for r in ordered)
    five = [ordered[i] for i in sorted(random_order(30)[:5])]
    mean5 = statistics.fmean(r.usage.prompt_tokens for r in five)
    mean30 = statistics.fmean(r.usage.prompt_tokens for r in ordered)
    row = next(ln for ln in printed.splitlines() if ln.startswith("| musique/naive |"))
    assert row.startswith(f"| musique/naive | {mean5:,.0f} (")
    assert f") | {mean30:,.0f} | {100 * (mean5 - mean30) / mean30:+.1f}% |" in row
    with pytest.raises(SystemExit):
        errors.main([str(ROOT / "no-such-folder")])
    assert "no-such-folder: no such folder of runs" in capsys.readouterr().err


def random_order(n: int) -> list[int]:
    """The positions of ``n`` questions in the order the estimate's seeded shuffle puts them."""
    order = list(range(n))
    random.Random(0).shuffle(order)
    return order


def test_the_local_ratio_is_what_the_script_measures(capsys: pytest.CaptureFixture[str]) -> None:
    """LOCAL_RATIO and docs/llm.md's table are scripts/token_ratio.py's measurement (needs the
    llama.cpp build and the fetched qwen2.5-coder-1.5b)."""
    need_model("qwen2.5-coder-1.5b")  # make test fetches it; under CI a missing model fails
    from chainrag.llm.tokens import LOCAL_RATIO

    script("token_ratio").main([])
    printed = capsys.readouterr().out
    table, _, last = printed.rstrip().rpartition("\n")
    pasted = ", ".join(f'"{e}": {r:.3f}' for e, r in LOCAL_RATIO.items())
    assert last == f"LOCAL_RATIO = {{{pasted}}}"
    assert table.split("\n\n")[0] in (ROOT / "docs" / "llm.md").read_text()
