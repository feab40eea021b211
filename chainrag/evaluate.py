"""Evaluating a recipe on a dataset: score each question, run many, resume, summarise.

    chainrag run recipes/chainrag/ansint.yaml recipes/baselines/naive.yaml --dataset musique

:func:`run_recipe` answers the questions a run directory does not have yet, through asyncio
with a bounded number of questions in flight (each in a worker thread, since the methods are
plain functions) and a bounded number of LLM requests in flight (1 for the managed local
server, which answers one request at a time anyway). Each finished question is one line in
the run's ``predictions.jsonl`` (see :mod:`chainrag.runs`).
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from chainrag.context import ModelStore
from chainrag.credentials import redact
from chainrag.errors import ChainragError, signal_name
from chainrag.graph import units_of
from chainrag.index import IndexCache
from chainrag.metrics import gold_items, qa_scores, retrieval_scores, title_retrieval_scores
from chainrag.protocols.llm import LLM
from chainrag.protocols.retrieval import Searchable
from chainrag.recipe import Recipe
from chainrag.run.meta import SessionEnd
from chainrag.run.record import (
    QuestionError,
    RetrievalRecord,
    RunRecord,
    ScoredAnswer,
    error_line,
    record_line,
)
from chainrag.runner import answer_question, searchable_index
from chainrag.runs import LineWriter, RunDir, done_ids
from chainrag.types import LLMRequest, LLMResponse, Prediction, QAExample

RECALL_KS = (2, 4, 5, 10)


@attrs.define
class LimitedLLM:
    """At most ``slots`` requests of this LLM in flight at once, across threads."""

    inner: LLM
    slots: threading.BoundedSemaphore

    @classmethod
    def at_most(cls, inner: LLM, n: int) -> LimitedLLM:
        return cls(inner, threading.BoundedSemaphore(n))

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self.slots:
            return self.inner.complete(request)


def retrieved_units(prediction: Prediction) -> list[int]:
    """Every unit a method retrieved, in order of first retrieval across its steps."""
    return list(dict.fromkeys(u for step in prediction.steps for u in step.retrieved))


def score(
    example: QAExample,
    prediction: Prediction,
    units: Sequence[Any],
    seconds: float,
    *,
    by_title: bool = False,
) -> RunRecord:
    """The record of one answered question; ``by_title`` scores retrieval from a shared corpus
    against the gold passages' titles."""
    answers = {}
    for named in prediction.answers:
        em, f1 = qa_scores(named.answer.text, example.answers)
        answers[named.name] = ScoredAnswer(named.answer.text, em, f1)
    _, gold = gold_items(example)
    retrieval = None
    if gold:
        ranked = [units[u] for u in retrieved_units(prediction)]
        scorer = title_retrieval_scores if by_title else retrieval_scores
        found = scorer(example, ranked, RECALL_KS)
        retrieval = RetrievalRecord(found.level, found.flat())
    return RunRecord(
        id=example.qid,
        dataset=example.dataset,
        question=example.question,
        question_type=example.question_type,
        gold=tuple(example.answers),
        answers=answers,
        retrieval=retrieval,
        trace=prediction,
        seconds=round(seconds, 3),
    )


def answer_and_score(
    recipe: Recipe,
    example: QAExample,
    llm: LLM,
    models: ModelStore,
    cache: IndexCache | None,
    shared: Searchable | None = None,
) -> RunRecord:
    """Answer ``example`` over ``shared`` (a corpus index), or over its own passages' index
    (built or loaded), and score it."""
    started = time.perf_counter()
    index = shared if shared is not None else searchable_index(recipe, example, models, cache)
    prediction = answer_question(recipe, example, llm, models=models, index=index)
    seconds = time.perf_counter() - started
    return score(example, prediction, units_of(index), seconds, by_title=shared is not None)


@attrs.define
class Tally:
    """Running figures for the progress bar: primary F1 and LLM calls per question."""

    n: int = 0
    f1: float = 0.0
    calls: int = 0
    failed: int = 0

    def add(self, record: RunRecord) -> None:
        self.n += 1
        self.f1 += record.f1
        self.calls += record.usage.calls + record.usage.cache_hits

    def postfix(self) -> dict[str, str]:
        if not self.n:
            return {}
        out = {"F1": f"{100 * self.f1 / self.n:.1f}", "calls/q": f"{self.calls / self.n:.1f}"}
        return out | ({"failed": str(self.failed)} if self.failed else {})


def pending(examples: Sequence[QAExample], records: Iterable[RunRecord]) -> list[QAExample]:
    """The examples without a finished line, in dataset order."""
    done = done_ids(list(records))
    return [e for e in examples if e.qid not in done]


async def _drive(
    remaining: Sequence[QAExample],
    work: Callable[[QAExample], RunRecord],
    on_record: Callable[[RunRecord], None],
    on_error: Callable[[QAExample, Exception], None],
    concurrency: int,
) -> None:
    loop = asyncio.get_running_loop()
    queue = iter(remaining)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="question") as pool:

        async def worker() -> None:
            for example in queue:  # one iterator shared by the workers (one event loop)
                try:
                    record = await loop.run_in_executor(pool, work, example)
                except Exception as exc:  # one question's failure, whatever it is, is its own
                    on_error(example, exc)
                    continue
                on_record(record)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(remaining)) or 1):
                group.create_task(worker())


def error_record(example: QAExample, exc: Exception) -> QuestionError:
    """The ``errors.jsonl`` line of a question that failed, credentials masked.

    A project error (an LLM that stayed down, unusable output) is expected; anything else is a
    bug, recorded with where it was raised so that it can be reported, while the run goes on.
    """
    error = QuestionError(
        id=example.qid,
        error=type(exc).__name__,
        message=redact(str(exc)),
        when=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    if isinstance(exc, ChainragError):
        return error
    trace = redact("".join(traceback.format_exception(exc, limit=-8)))
    return attrs.evolve(error, bug=True, traceback=trace)


@attrs.frozen
class SessionResult:
    """How one session of a run ended; ``interrupted`` names the signal that stopped it."""

    answered: int
    failed: int
    skipped: int
    torn_bytes: int
    seconds: float
    interrupted: str | None = None

    def summary(self) -> SessionEnd:
        """The session's end, for ``run.json``."""
        return SessionEnd(
            finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            answered=self.answered,
            failed=self.failed,
            resumed_from=self.skipped,
            wall_s=round(self.seconds, 1),
            torn_bytes_repaired=self.torn_bytes,
            interrupted=self.interrupted,
        )


def run_recipe(
    recipe: Recipe,
    examples: Sequence[QAExample],
    run: RunDir,
    llm: LLM,
    *,
    concurrency: int = 1,
    llm_slots: int = 1,
    models: ModelStore | None = None,
    cache: IndexCache | None = None,
    index: Searchable | None = None,
    progress: Callable[[int, int, Tally], None] | None = None,
) -> SessionResult:
    """Answer the questions of ``examples`` that ``run`` has no line for, appending a line each.

    Args:
        concurrency: Questions in flight at once.
        llm_slots: LLM requests in flight at once (1 for the local server).
        index: One index every question is answered over (a corpus index: the shared-corpus
            setting); None builds each question's own.
        progress: Called as ``progress(done, total, tally)`` after every question.
    """
    started = time.perf_counter()
    records, torn = run.records(repair=True)
    remaining = pending(examples, records)
    skipped = len(examples) - len(remaining)
    wanted = {e.qid for e in examples}
    tally = Tally()
    for record in records:
        if record.id in wanted:
            tally.add(record)
    total, done = len(examples), skipped
    if progress:
        progress(done, total, tally)
    limited = LimitedLLM.at_most(llm, llm_slots)
    models = models or ModelStore()
    writer = LineWriter(run.predictions_path)
    errors = LineWriter(run.folder / "errors.jsonl")

    def on_record(record: RunRecord) -> None:
        nonlocal done
        writer.append(record_line(record))
        tally.add(record)
        done += 1
        if progress:
            progress(done, total, tally)

    def on_error(example: QAExample, exc: Exception) -> None:
        tally.failed += 1
        errors.append(error_line(error_record(example, exc)))
        if progress:
            progress(done, total, tally)

    interrupted = None
    try:
        asyncio.run(
            _drive(
                remaining,
                lambda e: answer_and_score(recipe, e, limited, models, cache, index),
                on_record,
                on_error,
                concurrency,
            )
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: what is finished is kept
        interrupted = signal_name(exc)
    finally:
        writer.close()
        errors.close()
    return SessionResult(
        answered=done - skipped,
        failed=tally.failed,
        skipped=skipped,
        torn_bytes=torn,
        seconds=time.perf_counter() - started,
        interrupted=interrupted,
    )
