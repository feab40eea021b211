"""Questions' indexes built ahead of their turn (``run/ahead.py``) in build turns that serve a
question's own build first (``index/turns.py``): ahead only within ``depth`` of the questions
started, never for a question that came first, its error raised by its question, and a
threaded run's records the same as built in turn."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from chainrag.core.context import ModelStore
from chainrag.core.types import EncoderUsage, LLMRequest, LLMResponse, QAExample, Usage
from chainrag.data.datasets import load_dataset
from chainrag.index.turns import Behind, Turns
from chainrag.llm.fake import ScriptedLLM
from chainrag.recipes.recipe import Recipe, load_recipe
from chainrag.run import session
from chainrag.run.ahead import BuildsAhead
from chainrag.run.folder import RunDir
from chainrag.run.record import RunRecord
from chainrag.run.session import run_recipe
from chainrag.standin.server import FakeOpenAI, serve

from .conftest import DATA_ROOT, ROOT


def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for ``condition`` (a thread's progress), failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def waiters(turns: Turns) -> int:
    return len(turns._changed._waiters)  # type: ignore[attr-defined]


def test_a_questions_own_build_takes_a_free_turn_before_a_build_ahead() -> None:
    turns, order = Turns(1), []
    turns.acquire()  # a build holds the only turn

    def take(name: str, hold: Turns | Behind) -> threading.Thread:
        def run() -> None:
            with hold:
                order.append(name)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    ahead = take("ahead", turns.behind())
    until(lambda: waiters(turns) == 1)
    own = take("own", turns)
    until(lambda: waiters(turns) == 2)
    turns.release()
    own.join(10)
    ahead.join(10)
    assert order == ["own", "ahead"]  # the build ahead waited first, and was served second
    assert turns.acquire(blocking=False)


def test_a_promoted_build_ahead_waits_behind_no_one() -> None:
    turns = Turns(1)
    turns.acquire()
    own = threading.Thread(target=lambda: (turns.acquire(), turns.release()))
    own.start()
    until(lambda: waiters(turns) == 1)
    ahead = turns.behind()
    assert ahead.waits_behind()  # a question's own build waits: a free turn is its
    ahead.promote()
    assert not ahead.waits_behind()  # its question waits for it now
    turns.release()
    own.join(10)
    assert ahead.acquire(blocking=False)
    ahead.release()


def examples(n: int) -> list[QAExample]:
    return [QAExample(f"q{i}", "test", f"question {i}", ()) for i in range(n)]


class Recorded:
    """A build that records which examples it built, on which thread, and can be held."""

    def __init__(self, fail: str = "") -> None:
        self.built: list[str] = []
        self.threads: set[str] = set()
        self.go = threading.Event()
        self.go.set()
        self.fail = fail

    def __call__(self, example: QAExample, turn: Behind) -> str:
        self.go.wait(10)
        with turn:
            self.threads.add(threading.current_thread().name)
            if example.qid == self.fail:
                raise ValueError(f"no index for {example.qid}")
            self.built.append(example.qid)
        return example.qid + " built"


def test_builds_ahead_go_in_order_within_depth_of_the_questions_started() -> None:
    build, qs = Recorded(), examples(8)
    ahead = BuildsAhead(build, qs, Turns(2), skip=2, depth=2, threads=1)
    assert ahead.take(qs[0]) is None and ahead.take(qs[1]) is None  # they start at once
    until(lambda: len(build.built) == 2)
    assert build.built == ["q2", "q3"]  # within 2 of the 2 questions started
    assert ahead.take(qs[2]) == "q2 built"
    until(lambda: len(build.built) == 3)
    assert build.built == ["q2", "q3", "q4"]
    assert ahead.take(qs[3]) == "q3 built"
    ahead.stop()
    assert build.threads == {"build_ahead_0"}


def test_a_question_that_comes_first_builds_its_own_and_it_is_never_built_ahead() -> None:
    build, qs = Recorded(), examples(4)
    build.go.clear()  # the build ahead of q0 is held
    ahead = BuildsAhead(build, qs, Turns(2), skip=0, depth=4, threads=1)
    assert ahead.take(qs[1]) is None  # not begun: its question builds its own
    build.go.set()
    assert ahead.take(qs[0]) == "q0 built"  # under way: waited for
    until(lambda: build.built[-1:] == ["q3"])
    assert build.built == ["q0", "q2", "q3"]
    ahead.stop()


def test_a_build_aheads_error_is_raised_by_its_question() -> None:
    build, qs = Recorded(fail="q1"), examples(3)
    ahead = BuildsAhead(build, qs, Turns(1), skip=1, depth=2, threads=2)
    assert ahead.take(qs[0]) is None
    until(lambda: "q2" in build.built)
    with pytest.raises(ValueError, match="no index for q1"):
        ahead.take(qs[1])
    assert ahead.take(qs[2]) == "q2 built"


def test_stopped_it_begins_no_more() -> None:
    build, qs = Recorded(), examples(5)
    build.go.clear()
    ahead = BuildsAhead(build, qs, Turns(1), skip=0, depth=5, threads=1)
    until(lambda: len(ahead._slots) == 1)  # q0 claimed, held
    ahead.stop()
    build.go.set()
    assert ahead.take(qs[0]) == "q0 built"  # under way: it ends
    assert all(ahead.take(q) is None for q in qs[1:])
    assert build.built == ["q0"]


class Waiting(ScriptedLLM):
    """Answers as ``ScriptedLLM`` does, each reply after ``delay`` seconds (a remote model)."""

    def __init__(self, delay: float) -> None:
        super().__init__({"cxtint": lambda _: "Paris"})
        self.delay = delay

    def complete(self, request: LLMRequest) -> LLMResponse:
        time.sleep(self.delay)
        return attrs.evolve(super().complete(request), usage=Usage(calls=1))


def test_a_threaded_runs_records_are_those_of_a_run_built_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a remote LLM and a remote embedder (here the stand-in's), a run answering 3 at a
    time builds the next questions' indexes ahead, and records what a run one at a time does;
    with a local embedder (its CPU bounds the run) it builds none ahead."""
    ahead_threads: list[str] = []
    real = session.builder

    def noted(*args: object) -> Callable[[QAExample, Behind], object]:
        build = real(*args)  # type: ignore[arg-type]

        def noting(example: QAExample, turn: Behind) -> object:
            ahead_threads.append(threading.current_thread().name)
            return build(example, turn)

        return noting

    monkeypatch.setattr(session, "builder", noted)
    qs, lines = load_dataset("musique", 8), {}
    with serve(FakeOpenAI([])) as base:
        embedder = ("{kind: litellm, model: openai/standin-embed, dimensions: 64, "
                    f"api_base: '{base}'}}")  # fmt: skip
        for width in (1, 3):
            monkeypatch.setenv("CHAINRAG_CACHE", str(tmp_path / f"cache{width}"))  # both pay
            recipe, path = naive(tmp_path, embedder)
            run = RunDir(tmp_path / f"run{width}")
            run.folder.mkdir()
            run.start(recipe, path, "musique", DATA_ROOT / "musique_dev.jsonl")
            result = run_recipe(recipe, qs, run, Waiting(0.3), concurrency=width)
            assert result.answered == 8 and result.failed == 0
            records, _ = run.records()
            lines[width] = sorted(map(timeless, records), key=lambda r: r.id)
    assert ahead_threads and all(t.startswith("build_ahead_") for t in ahead_threads)
    assert len(ahead_threads) <= 5  # at most the questions after the first three
    assert lines[1] == lines[3]  # the embeddings counted for their questions too
    assert all(u.sent > 0 for r in lines[3] for _, u in r.trace.encoder_usage)
    local, _ = naive(tmp_path, "{kind: hashed_bow, dim: 64}")
    assert session.builds_ahead(local, ModelStore(), None, qs, 3) is None


def timeless(record: RunRecord) -> RunRecord:
    """``record`` without its times, and its encoder work as the texts each stage embedded,
    sent or found stored (which of the two depends on what other questions stored first)."""
    trace = record.trace
    usage = tuple((stage, EncoderUsage(sent=u.sent + u.stored)) for stage, u in trace.encoder_usage)
    return attrs.evolve(record, seconds=0.0, trace=attrs.evolve(trace, encoder_usage=usage))


def naive(tmp_path: Path, embedder: str) -> tuple[Recipe, Path]:
    """NaiveRAG with ``embedder`` and a remote LLM."""
    path = tmp_path / "naive.yaml"
    path.write_text(
        f"base: {ROOT / 'recipes' / 'baselines' / 'naive.yaml'}\nname: naive\n"
        f"index: {{embedder: {embedder}}}\nllm: {{kind: litellm, model: openai/remote}}\n"
    )
    return load_recipe(path), path
