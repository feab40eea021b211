"""The run harness: one line per question, resume after a torn line and after kill -9,
bounded concurrency, failures kept apart, and the report rendered from a stored run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chainrag.cli.main import app
from chainrag.core.errors import ChainragError, Interrupted
from chainrag.core.types import LLMRequest, LLMResponse, QAExample, Usage
from chainrag.data.datasets import load_dataset
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import Recipe, load_recipe
from chainrag.report import find_runs, markdown, plots, rows_of
from chainrag.run.files import RunError, locked, read_lines
from chainrag.run.folder import RunDir
from chainrag.run.interrupts import signals_held
from chainrag.run.record import RetrievalRecord
from chainrag.run.session import run_recipe, sigterm_as_interrupt
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import DATA_ROOT, ROOT
from .run_records import record, write_run

DATA = DATA_ROOT / "musique_dev.jsonl"


def naive_recipe(tmp_path: Path, extra: str = "", name: str = "naive") -> tuple[Path, Recipe]:
    """NaiveRAG over chunks with a cheap hashed embedder (no model to load)."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\n"
        f"name: {name}\n"
        "index: {embedder: {kind: hashed_bow, dim: 64}}\n" + extra
    )
    return path, load_recipe(path)


def fails_on(question: str, error: Exception) -> ScriptedLLM:
    """Answers "Paris", but raises ``error`` on any request about ``question``."""

    def reply(request: LLMRequest) -> str:
        if any(question in m.content for m in request.messages):
            raise error
        return "Paris"

    return ScriptedLLM({"cxtint": reply})


def fake_llm_recipe(tmp_path: Path, api_base: str) -> Path:
    """NaiveRAG (as :func:`naive_recipe`) answered by the fake OpenAI server at ``api_base``."""
    path, _ = naive_recipe(
        tmp_path,
        f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}', "
        "max_retries: 0}\n",
    )
    return path


def gold_replier(examples: list[QAExample]) -> ScriptedLLM:
    """Answers the gold answer for even-numbered questions and "Paris" otherwise."""
    right = {e.question: e.answers[0] for e in examples[::2]}

    def reply(request: LLMRequest) -> str:
        text = " ".join(m.content for m in request.messages)
        return next((a for q, a in right.items() if q in text), "Paris")

    return ScriptedLLM({"cxtint": reply})


def start(tmp_path: Path, recipe_path: Path, recipe: Recipe, folder: str = "run") -> RunDir:
    run = RunDir(tmp_path / folder)
    run.folder.mkdir(parents=True, exist_ok=True)
    run.start(recipe, recipe_path, "musique", DATA)
    return run


def test_one_line_per_question_with_scores_and_accounting(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 4)
    run = start(tmp_path, path, recipe)
    result = run_recipe(recipe, examples, run, gold_replier(examples))
    assert (result.answered, result.failed, result.skipped) == (4, 0, 0)
    records, torn = run.records()
    assert torn == 0
    assert [r.id for r in records] == [e.qid for e in examples]
    assert [r.f1 for r in records] == [1.0, 0.0, 1.0, 0.0]
    first = records[0]
    assert first.answers["naive"].em == 1.0
    assert first.usage.calls == 1 and dict(first.trace.usage_by_prompt)["cxtint"].calls == 1
    assert first.retrieval is not None and first.retrieval.level == "paragraph"
    assert 0.0 <= first.retrieval.scores["recall@5"] <= 1.0
    assert first.trace.steps[0].retrieved
    meta = run.meta()
    assert meta.dataset == "musique" and meta.dataset_fingerprint.startswith("sha256:")
    assert meta.packages["chainrag"] and meta.models.llm.sha256
    assert load_recipe(run.folder / "recipe.yaml") == recipe


def test_a_run_in_the_pooled_setting(tmp_path: Path) -> None:
    """pooled:NAME: every question retrieves from all the dev file's passages, built once."""
    from chainrag.cli.runs import dataset_slug

    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("pooled:musique", 3)
    run = RunDir(tmp_path / dataset_slug("pooled:musique") / "naive")
    run.folder.mkdir(parents=True)
    run.start(recipe, path, "pooled:musique", DATA)
    result = run_recipe(recipe, examples, run, gold_replier(examples))
    assert (result.answered, result.failed) == (3, 0)
    records, _ = run.records()
    pool = examples[0].passages
    for line, example in zip(records, examples, strict=True):
        units = [u for s in line.trace.steps for u in s.retrieved]
        assert units and max(units) >= 0
        assert line.retrieval is not None and line.retrieval.level == "paragraph"
        assert {pool[p].title for p in example.supporting_passages} <= {p.title for p in pool}
    assert run.folder.parent.name == "pooled-musique"
    assert run.meta().dataset == "pooled:musique"


def test_resume_repairs_a_torn_last_line_and_runs_only_the_rest(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 5)
    run = start(tmp_path, path, recipe)
    run_recipe(recipe, examples[:2], run, gold_replier(examples))
    intact = run.predictions_path.read_bytes()
    with run.predictions_path.open("ab") as fh:  # a crash in the middle of the third write
        fh.write(b'{"id": "' + examples[2].qid.encode() + b'", "f1": 0.')
    llm = gold_replier(examples)
    result = run_recipe(recipe, examples, run, llm)
    assert (result.answered, result.skipped) == (3, 2)
    assert result.torn_bytes > 0
    assert len(llm.requests) == 3  # nothing finished was asked again
    data = run.predictions_path.read_bytes()
    assert data.startswith(intact) and data.endswith(b"\n")
    records, _ = read_lines(run.predictions_path, repair=False)
    assert [r["id"] for r in records] == [e.qid for e in examples]  # none lost, none twice


def test_a_broken_complete_line_is_an_error_and_changes_nothing(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 2)
    run = start(tmp_path, path, recipe)
    run_recipe(recipe, examples[:1], run, gold_replier(examples))
    with run.predictions_path.open("ab") as fh:
        fh.write(b"this is not json\n")
    before = run.predictions_path.read_bytes()
    with pytest.raises(RunError, match=r"predictions.jsonl, line 2: not a JSON line"):
        run_recipe(recipe, examples, run, gold_replier(examples))
    assert run.predictions_path.read_bytes() == before


def test_another_recipe_or_dataset_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    start(tmp_path, path, recipe)
    other_path, other = naive_recipe(tmp_path, "retrieval: {seed: {k: 2}}\n", name="naive_k2")
    with pytest.raises(RunError, match="holds a run of another recipe"):
        start(tmp_path, other_path, other)
    changed = tmp_path / "musique_copy.jsonl"
    changed.write_text(DATA.read_text()[:5000].rsplit("\n", 1)[0] + "\n")
    with pytest.raises(RunError, match="the dataset file changed"):
        RunDir(tmp_path / "run").start(recipe, path, "musique", changed)


def test_a_second_writer_is_locked_out(tmp_path: Path) -> None:
    with (
        locked(tmp_path / "run"),
        pytest.raises(RunError, match=r"another chainrag run \(pid"),
        locked(tmp_path / "run"),
    ):
        pass
    with locked(tmp_path / "run"):  # released again
        pass


class SlowLLM:
    """Counts the requests in flight at once; every request takes ``delay`` seconds."""

    def __init__(self, delay: float = 0.05, meet: int = 1) -> None:
        self.delay = delay
        self.meet = meet
        self.now = self.peak = self.calls = 0
        self.lock = threading.Condition()
        self.threads: set[str] = set()

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
            self.threads.add(threading.current_thread().name)
            # The first requests wait (10 s at most) until ``meet`` are in flight together, so
            # the peak does not hang on how the machine schedules threads under load.
            self.lock.notify_all()
            self.lock.wait_for(lambda: self.peak >= self.meet, timeout=10)
        time.sleep(self.delay)
        with self.lock:
            self.now -= 1
        return LLMResponse("Paris", "slow", Usage(calls=1, prompt_tokens=5, completion_tokens=1))


def test_questions_in_flight_share_the_runs_model_store_while_it_is_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty store was falsy, so ``models or ModelStore()`` gave each question a store of its
    own until a model was loaded: over a warm vector store (no model loaded by the index)
    several questions then loaded the embedder at once and lost to transformers' import race."""
    import chainrag.run.question as question

    def private_store() -> None:
        raise AssertionError("a question made a model store of its own")

    monkeypatch.setattr(question, "ModelStore", private_store)
    recipe_path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 4)
    run = start(tmp_path, recipe_path, recipe)
    result = run_recipe(recipe, examples, run, gold_replier(examples), concurrency=4)
    assert result.failed == 0 and result.answered == 4


@pytest.mark.parametrize(("concurrency", "slots"), [(1, 1), (4, 1), (4, 2), (6, 6)])
def test_concurrency_bounds_llm_requests_in_flight(
    tmp_path: Path, concurrency: int, slots: int
) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 12)
    run = start(tmp_path, path, recipe)
    llm = SlowLLM(meet=min(slots, concurrency))
    result = run_recipe(recipe, examples, run, llm, concurrency=concurrency, llm_slots=slots)
    assert result.answered == 12 and llm.calls == 12
    assert llm.peak == min(slots, concurrency)
    assert len(llm.threads) == concurrency  # the questions really ran in that many workers
    ids = [r.id for r in run.records()[0]]
    assert sorted(ids) == sorted(e.qid for e in examples) and len(set(ids)) == 12


class InterruptingLLM(SlowLLM):
    """A slow LLM that sends SIGINT to the main thread (Ctrl-C) during its ``at``-th request."""

    def __init__(self, at: int) -> None:
        super().__init__(delay=0.2)
        self.at = at

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self.lock:
            nth = self.calls + 1
        if nth == self.at:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        return super().complete(request)


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as at a terminal, for the test's length. A process
    started from a background job (``make test &``, ``nohup``) inherits SIGINT ignored, and
    Python then leaves it ignored: without this the test's Ctrl-C would never arrive."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_an_interrupt_cancels_the_questions_not_started(tmp_path: Path) -> None:
    """Ctrl-C while 2 of 10 questions are in flight: those 2 finish and are written, the rest
    never start, and the session ends as interrupted; the next session does the rest."""
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 10)
    run = start(tmp_path, path, recipe)
    llm = InterruptingLLM(at=3)
    result = run_recipe(recipe, examples, run, llm, concurrency=2, llm_slots=2)
    assert result.interrupted == "SIGINT"
    assert 3 <= llm.calls <= 4 and result.answered == llm.calls  # in flight: finished, kept
    assert len(run.records()[0]) == result.answered
    again = run_recipe(recipe, examples, run, SlowLLM(delay=0.0))
    assert (again.skipped, again.answered, again.interrupted) == (
        result.answered,
        10 - result.answered,
        None,
    )


@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_signal_while_a_line_is_written_is_raised_once_it_is_written() -> None:
    """A Ctrl-C or SIGTERM that lands while a question's line is written waits for the line:
    otherwise it was either lost from the session or written twice."""
    done: list[str] = []

    def written(sig: signal.Signals) -> None:
        with signals_held():
            signal.pthread_kill(threading.main_thread().ident or 0, sig)
            time.sleep(0.1)  # a handler would have run by now
            done.append(sig.name)

    for sig, raised in ((signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Interrupted)):
        with sigterm_as_interrupt(), pytest.raises(raised):
            written(sig)
        assert done[-1] == sig.name
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_failed_questions_go_to_errors_and_are_tried_again(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 3)
    run = start(tmp_path, path, recipe)
    stayed_down = fails_on(examples[1].question, ChainragError("the LLM stayed down"))
    result = run_recipe(recipe, examples, run, stayed_down)
    assert (result.answered, result.failed) == (2, 1)
    errors, _ = read_lines(run.folder / "errors.jsonl", repair=False)
    assert errors[0]["id"] == examples[1].qid and "stayed down" in errors[0]["message"]
    assert find_runs([run.folder])[0].failed == 1
    again = run_recipe(recipe, examples, run, ScriptedLLM({"cxtint": ["Paris"]}))
    assert (again.answered, again.skipped, again.failed) == (1, 2, 0)
    assert find_runs([run.folder])[0].failed == 0


def test_a_dead_server_stops_the_run_and_the_same_command_resumes(tmp_path: Path) -> None:
    """The managed server died twice on question 3 of 5 (ServerDiedError, stops_run): the run
    ends there with that error recorded in run.json, questions 1-2 are kept, question 3 gets no
    errors.jsonl line (it is not its failure) and questions 4-5 never start; the next session
    answers the other 3."""
    from chainrag.core.errors import ServerDiedError

    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 5)
    run = start(tmp_path, path, recipe)
    died = ServerDiedError("the local LLM server died 2 time(s): it was killed by signal")
    result = run_recipe(recipe, examples, run, fails_on(examples[2].question, died))
    assert isinstance(result.stopped, ServerDiedError)
    assert (result.answered, result.failed) == (2, 0)
    assert not (run.folder / "errors.jsonl").read_text()
    run.finish_session(result.summary())
    assert "died 2 time(s)" in (run.meta().sessions[-1].end.stopped or "")  # type: ignore[union-attr]
    again = run_recipe(recipe, examples, run, ScriptedLLM({"cxtint": lambda _: "Paris"}))
    assert (again.answered, again.skipped, again.stopped) == (3, 2, None)


def test_report_from_a_stored_run(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 4)
    run = start(tmp_path, path, recipe, folder="runs/musique/naive")
    run_recipe(recipe, examples, run, gold_replier(examples))
    runs = find_runs([tmp_path / "runs"])
    (row,) = rows_of(runs[0])
    assert (row.label, row.n, row.f1, row.em, row.calls) == ("NaiveRAG", 4, 50.0, 50.0, 1.0)
    text = markdown(runs)
    assert "## musique" in text
    # right on 2 of 4 questions: a bootstrap mean of 4 draws is 0 or 1 with chance 1/16 each,
    # beyond the 2.5% tails, so the 95% interval is [0, 100] exactly
    assert "| NaiveRAG | qwen2.5-coder-1.5b | 4 | 50.00 [0.0, 100.0] | 50.00 [0.0, 100.0] |" in text
    assert "the paper's Table 1" in text and "| NaiveRAG | 29.82 / 19.00 |" in text
    written = plots(runs, tmp_path / "plots")
    assert {p.name for p in written} == {"f1_by_method.png", "f1_vs_calls.png"}
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)


def test_report_command(tmp_path: Path) -> None:
    path, recipe = naive_recipe(tmp_path)
    examples = load_dataset("musique", 2)
    run = start(tmp_path, path, recipe, folder="runs/musique/naive")
    run_recipe(recipe, examples, run, gold_replier(examples))
    runner = CliRunner()
    out = tmp_path / "report.md"
    result = runner.invoke(app, ["report", str(tmp_path / "runs"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "| NaiveRAG |" in out.read_text()
    assert (tmp_path / "plots" / "f1_vs_calls.png").is_file()
    missing = runner.invoke(app, ["report", str(tmp_path / "nothing")])
    assert missing.exit_code == 1 and "no such run directory" in missing.output


def _cli() -> list[str]:
    return [str(Path(sys.executable).parent / "chainrag")]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_run_command_resumes_after_kill_9(tmp_path: Path) -> None:
    """kill -9 in the middle of a run, tear the last line too, and start again: every
    question ends up with exactly one line."""
    fake = FakeOpenAI([], reply="Paris", delay_s=0.15)
    with serve(fake) as api_base:
        path, _ = naive_recipe(
            tmp_path,
            f"llm: {{kind: litellm, model: openai/fake-model, api_base: '{api_base}', "
            "max_retries: 0}\n",
        )
        args = [*_cli(), "run", str(path), "--dataset", "musique", "--limit", "12",
                "--out", str(tmp_path / "runs"), "--no-report"]  # fmt: skip
        predictions = tmp_path / "runs" / "musique" / "naive" / "predictions.jsonl"
        env = os.environ | {"CHAINRAG_CACHE": str(tmp_path / "cache")}
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while _lines(predictions) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed_at = _lines(predictions)
        assert 3 <= killed_at < 12
        with predictions.open("ab") as fh:
            fh.write(b'{"id": "torn')
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert "torn last line repaired" in again.stdout
        assert f"{killed_at} already done" in again.stdout
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "0 answered, 12 already done" in done.stdout
    records, torn = read_lines(predictions, repair=False)
    assert torn == 0
    ids = [r["id"] for r in records]
    assert len(ids) == 12 and set(ids) == {e.qid for e in load_dataset("musique", 12)}
    meta = json.loads((predictions.parent / "run.json").read_text())
    assert len(meta["sessions"]) == 2 and meta["sessions"][1]["resumed_from"] == killed_at
    # the third start found nothing to do and left no session behind


def test_run_command_rejects_bad_input_before_running(tmp_path: Path) -> None:
    runner = CliRunner()
    path, _ = naive_recipe(tmp_path)
    bad_dataset = runner.invoke(app, ["run", str(path), "--dataset", "squad"])
    assert bad_dataset.exit_code == 1 and "unknown dataset 'squad'" in bad_dataset.output
    index_only = tmp_path / "index_only.yaml"
    index_only.write_text(f"base: {ROOT / 'recipes' / 'index' / 'chunks.yaml'}\n")
    incomplete = runner.invoke(
        app, ["run", str(index_only), "--dataset", "musique", "--out", str(tmp_path / "runs")]
    )
    assert incomplete.exit_code == 1 and "no retrieval, method section" in incomplete.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"input": "Who?", "context": "", "answers": ["x"]}) + "\n")
    out = ["--out", str(tmp_path / "runs")]
    no_passages = runner.invoke(app, ["run", str(path), "--dataset", f"longbench:{empty}", *out])
    # an empty LongBench context is a bad record now (issue 19), named before any run starts
    assert no_passages.exit_code == 1 and "field 'context'" in no_passages.output
    assert not (tmp_path / "runs").exists()


def _stored_run(
    root: Path, dataset: str, name: str, f1s: dict[str, list[float]], types: str = ""
) -> None:
    """A run directory written by hand: answers with the given F1 (EM = F1 here); question
    ``i`` has type ``types[i]`` when given."""
    n = len(next(iter(f1s.values())))
    usage = Usage(calls=3, cache_hits=1, prompt_tokens=90, completion_tokens=10)
    retrieval = RetrievalRecord("paragraph", {"recall@2": 0.5})
    records = [
        record(f"q{i}", {v: f[i] for v, f in f1s.items()}, question_type=types[i] if types else "",
               retrieval=retrieval, usage=usage)
        for i in range(n)
    ]  # fmt: skip
    write_run(root / dataset / name, records, dataset=dataset, tail="\n" * (not n) + '{"id": "torn')


def test_report_of_ablations_and_the_k_sweep(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _stored_run(root, "musique", "ansint", {"ansint": [1, 0, 1, 1], "cxtint": [0, 0, 1, 1]})
    _stored_run(root, "musique", "no_ec", {"ansint": [1, 0, 0, 1], "cxtint": [0, 0, 0, 1]})
    _stored_run(root, "musique", "no_rewrite", {"ansint": [0, 0, 0, 1], "cxtint": [0, 0, 1, 1]})
    for k in (1, 3):
        _stored_run(root, "musique", f"k{k}", {"ansint": [k / 3] * 4, "cxtint": [0.5] * 4})
    runs = find_runs([root])
    text = markdown(runs)
    row = ("| ChainRAG (AnsInt) | qwen2.5-coder-1.5b | 4 | 75.00 [25.0, 100.0] | 75.00 [25.0, "
           "100.0] | 50.0 | 4.0 | 100 | 2.0 |")  # fmt: skip
    assert row in text  # calls/q counts cache hits; the torn last line is ignored
    assert "| ChainRAG (AnsInt), no_ec | qwen2.5-coder-1.5b | 4 | 50.00 [0.0, 100.0] |" in text
    assert "| ChainRAG (CxtInt), k1 |" in text
    ablations = text.index("### musique: Ablations (cf. the paper's Figures 4–5)")
    sweep = text.index("### musique: k seed sentences (cf. the paper's Figure 7)")
    assert text.index(row) < ablations < text.index("ChainRAG (AnsInt), no_ec") < sweep
    assert text.count("the paper's Table 1") == 1  # under the methods' table only
    # the paper's Tables 7-8 (GPT-4o-mini, MuSiQue) under the ablations, before the k sweep
    reference = text.index("For reference, **the paper's Tables 7–8**")
    assert text.index("ChainRAG (AnsInt), no_ec") < reference < sweep
    assert "| w/o rewriting | 38.18 / 26.50 | 36.60 / 25.00 |" in text
    assert text.count("the paper's Tables 7–8") == 1
    written = {p.name for p in plots(runs, tmp_path / "plots")}
    assert written == {"f1_by_method.png", "f1_vs_calls.png", "ablations.png", "k_sweep.png"}


def test_priced_runs_get_a_cost_column(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _stored_run(root, "musique", "naive", {"naive": [1.0, 0.0]})
    predictions = root / "musique" / "naive" / "predictions.jsonl"
    lines = predictions.read_text().splitlines()[:2]
    priced = []
    for line, cost in zip(lines, (0.001, 0.003), strict=True):
        record = json.loads(line)
        record["usage"]["cost_usd"] = cost
        priced.append(json.dumps(record))
    predictions.write_text("\n".join(priced) + "\n")
    text = markdown(find_runs([root]))
    assert "| USD/q |" in text and "| 0.00200 |" in text


def test_rows_compare_the_same_questions(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _stored_run(root, "musique", "naive", {"naive": [1.0, 0.0, 1.0, 1.0]})
    _stored_run(root, "musique", "ansint", {"ansint": [1.0, 1.0], "cxtint": [0.0, 0.0]})
    runs = find_runs([root])
    text = markdown(runs)
    assert "Scored on the 2 questions every run below answered (the runs hold 2, 4;" in text
    assert "| NaiveRAG | qwen2.5-coder-1.5b | 2 | 50.00 [0.0, 100.0] |" in text
    own = markdown(runs, common=False)
    assert "| NaiveRAG | qwen2.5-coder-1.5b | 4 | 75.00 [25.0, 100.0] |" in own
    assert "Scored on" not in own
    _stored_run(root, "musique", "iter_retgen", {"iter_retgen": []})  # started, nothing done
    with_empty = markdown(find_runs([root]))
    assert with_empty == text  # trims nothing, adds no row


def test_ablations_are_compared_apart_from_the_methods(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _stored_run(root, "musique", "naive", {"naive": [1.0, 0.0, 1.0, 1.0]})
    _stored_run(root, "musique", "ansint", {"ansint": [1.0, 1.0, 0.0, 0.0], "cxtint": [0.0] * 4})
    _stored_run(root, "musique", "no_graph", {"ansint": [0.0, 1.0], "cxtint": [1.0, 1.0]})
    text = markdown(find_runs([root]))
    methods, ablations = text.split("### musique: Ablations")
    assert "Scored on" not in methods  # an unfinished ablation does not trim the methods
    assert "| ChainRAG (AnsInt) | qwen2.5-coder-1.5b | 4 | 50.00 [0.0, 100.0] |" in methods
    assert "Scored on the 2 questions every run below answered (the runs hold 4, 2;" in ablations
    assert "| ChainRAG (AnsInt) | qwen2.5-coder-1.5b | 2 | 100.00 [100.0, 100.0] |" in ablations
    assert "| ChainRAG (CxtInt), no_graph | qwen2.5-coder-1.5b | 2 | 100.00 [100.0, 100.0] |" in (
        ablations
    )
    assert "NaiveRAG" not in ablations
    _stored_run(root, "2wiki", "ansint", {"ansint": [1.0], "cxtint": [1.0]})
    assert "### 2wiki: Ablations" not in markdown(find_runs([root]))  # no ablation run there


def test_report_gives_f1_by_question_type(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _stored_run(root, "2wiki", "naive", {"naive": [1.0, 0.0, 0.0, 1.0, 0.5]}, types="ccbcb")
    _stored_run(root, "2wiki", "ansint", {"ansint": [1.0, 1.0, 1.0, 0.0], "cxtint": [0.0] * 4},
                types="ccbc")  # fmt: skip
    runs = find_runs([root])
    text = markdown(runs)  # on the 4 common questions: c, c, b, c
    assert "F1 by the dataset's question type:" in text
    header = "| question type (n) | ChainRAG (AnsInt) | ChainRAG (CxtInt) | NaiveRAG |"
    assert header in text
    assert "| c (3) | 66.7 | 0.0 | 66.7 |" in text and "| b (1) | 100.0 | 0.0 | 0.0 |" in text
    own = markdown(runs, common=False)  # NaiveRAG answered one more b question
    assert "| b (2) | 100.0 (1) | 0.0 (1) | 25.0 |" in own
    _stored_run(root, "musique", "naive", {"naive": [1.0, 0.0]}, types="aa")
    single = markdown(find_runs([root / "musique"]))
    assert "question type" not in single  # one type: no table


def test_report_puts_the_datasets_side_by_side(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _stored_run(root, "musique", "naive", {"naive": [1.0, 0.0]})
    _stored_run(root, "2wiki", "naive", {"naive": [1.0, 1.0, 0.0, 1.0]})
    _stored_run(root, "2wiki", "ansint", {"ansint": [1.0] * 4, "cxtint": [0.0] * 4})
    text = markdown(find_runs([root]))
    assert "| method | 2wiki F1 [95%] / EM (n) | musique F1 [95%] / EM (n) |" in text
    assert "| NaiveRAG | 75.00 [25.0, 100.0] / 75.00 (4) | 50.00 [0.0, 100.0] / 50.00 (2) |" in text
    assert "| ChainRAG (CxtInt) | 0.00 [0.0, 0.0] / 0.00 (4) | – |" in text
    assert text.index("## Across datasets") < text.index("## 2wiki")
    alone = markdown(find_runs([root / "2wiki"]))
    assert "Across datasets" not in alone


def test_model_identities_name_the_default_embedder() -> None:
    from chainrag.run.meta import model_identities

    identities = model_identities(load_recipe(ROOT / "recipes" / "baselines" / "naive.yaml"))
    llm = identities.llm
    assert llm.file and llm.file.endswith(".gguf") and llm.sha256 and len(llm.sha256) == 64
    ((path, identity),) = identities.files.items()
    assert "minilm" in path.lower() and identity.startswith("files-sha256:")
