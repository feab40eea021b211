"""One session of a run: a recipe over the questions its run folder has no line for yet.

    with open_llm(recipe.llm, cache_path=llm_cache_path(), slots=4) as llm:
        result = run_recipe(recipe, examples, RunDir(folder), llm, concurrency=4)

:func:`run_recipe` answers the pending questions in a plain thread pool (``concurrency``
questions in flight; the methods are plain functions). The LLM paces its own live requests: one
from :func:`chainrag.llm.open_llm` holds its slots and the provider's per-minute limits below its
response cache (:mod:`chainrag.llm.pacing`), so that an answer replayed from the cache never
waits for a live request; ``llm_slots`` limits an LLM that does not (a scripted one in a test).
Each finished question is one line in the folder's ``predictions.jsonl``, written as it finishes;
a question that fails, whatever the exception, is one line in ``errors.jsonl`` and the others go
on. Ctrl-C or SIGTERM (see :func:`sigterm_as_interrupt`) cancels the questions not started yet;
those in flight finish or fail and are recorded, and the session ends as interrupted. An error
that is no question's own but the run's (a ``RunStopError``: the managed server died twice) ends the
session the same way, without a line for the questions it stopped, and is raised again once the
session's end is recorded (:attr:`SessionResult.stopped`).

A method with cross-question state (seed 004's knowledge reservoir: a
:class:`~chainrag.protocols.parts.Stateful` method) answers one question at a time; each line
records the state's marker after its question, a failed question's writes are rolled back, and
a resumed run first rolls the state back to the last recorded marker (or to the run's start,
``state.json``), so a killed run resumes over the state its recorded questions left.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, as_completed
from types import FrameType
from typing import TypeVar

import attrs

from chainrag.components.index.spacy_workers import run_placement, start_workers
from chainrag.context import StageContext
from chainrag.core.context import ModelStore
from chainrag.core.credentials import redact
from chainrag.core.device import cores
from chainrag.core.errors import ChainragError, Interrupted, RunStopError, signal_name
from chainrag.core.types import QAExample
from chainrag.index.build import IndexCache, spacy_stages, waits_on_network
from chainrag.llm.stack import LimitedLLM
from chainrag.protocols.llm import LLM
from chainrag.protocols.parts import RunState, Stateful
from chainrag.protocols.units import Searchable
from chainrag.recipes.recipe import Recipe
from chainrag.run.ahead import BuildsAhead
from chainrag.run.files import LineWriter, RunError, write_json
from chainrag.run.folder import ERRORS, RunDir
from chainrag.run.interrupts import QuestionPool, notice, signals_held
from chainrag.run.meta import SessionEnd
from chainrag.run.question import BUILDS, Built, answer_and_score, builder
from chainrag.run.record import QuestionError, RunRecord, error_line, record_line

T = TypeVar("T")


@attrs.define
class Tally:
    """Running figures for the progress bar: primary F1 and LLM calls per question."""

    n: int = 0
    f1: float = 0.0
    calls: int = 0
    failed: int = 0
    bugs: list[QuestionError] = attrs.field(factory=list)
    """The failures that are chainrag's bugs (not a :class:`ChainragError`), in order."""

    def add(self, record: RunRecord) -> None:
        self.n += 1
        self.f1 += record.f1
        self.calls += record.usage.calls + record.usage.cache_hits

    def postfix(self) -> dict[str, str]:
        if not self.n:
            return {}
        out = {"F1": f"{100 * self.f1 / self.n:.1f}", "calls/q": f"{self.calls / self.n:.1f}"}
        return out | ({"failed": str(self.failed)} if self.failed else {})


@attrs.frozen
class SessionResult:
    """How one session of a run ended; ``interrupted`` names the signal that stopped it."""

    answered: int
    failed: int
    skipped: int
    torn_bytes: int
    seconds: float
    interrupted: str | None = None
    stopped: ChainragError | None = None
    """The error that ended the session before its questions were done (a ``RunStopError``)."""
    bugs: tuple[QuestionError, ...] = ()
    """The questions that failed on a bug in chainrag (``"bug": true`` in ``errors.jsonl``)."""

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
            stopped=redact(str(self.stopped)) if self.stopped is not None else None,
        )


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


def pending(examples: Sequence[QAExample], records: Sequence[RunRecord]) -> list[QAExample]:
    """The examples without a finished line, in dataset order."""
    done = {r.id for r in records}
    return [e for e in examples if e.qid not in done]


Progress = Callable[[int, int, Tally], None]
"""``progress(done, total, tally)``: called after every question (and once at the start)."""


def run_recipe(
    recipe: Recipe,
    examples: Sequence[QAExample],
    run: RunDir,
    llm: LLM,
    *,
    concurrency: int = 1,
    llm_slots: int | None = None,
    models: ModelStore | None = None,
    cache: IndexCache | None = None,
    index: Searchable | None = None,
    progress: Progress | None = None,
) -> SessionResult:
    """Answer the questions of ``examples`` that ``run`` has no line for, appending a line each.

    Args:
        concurrency: Questions in flight at once.
        llm_slots: LLM requests in flight at once, held around the whole ``llm``, for an LLM
            that does not pace itself; None (the default) where it does, below its response
            cache (:func:`chainrag.llm.open_llm`'s ``slots``), so that a cached answer never
            waits.
        index: One index every question is answered over (a corpus index: the shared-corpus
            setting); None builds each question's own.
        progress: Called as ``progress(done, total, tally)`` after every question.
    """
    started = time.perf_counter()
    records, torn = run.records(repair=True)
    models = models if models is not None else ModelStore()
    state = restored_state(recipe, run, records, models)
    tally = tally_of(examples, records)
    skipped = tally.n  # the examples with a line
    limited = LimitedLLM.at_most(llm, llm_slots) if llm_slots is not None else llm
    width = 1 if state is not None else concurrency  # a question reads the state before it
    remaining = pending(examples, records)
    if index is None:  # each question builds its own index
        place_spacy(recipe, width, models)
    ahead = builds_ahead(recipe, models, cache, remaining, width) if index is None else None

    def answer_one(example: QAExample) -> RunRecord:
        built = ahead.take(example) if ahead is not None else None
        return answer_and_score(recipe, example, limited, models, cache, index, built)

    answer = with_state(answer_one, state) if state is not None else answer_one
    recorder = _Recorder(run, tally, len(examples), progress)
    with ahead if ahead is not None else contextlib.nullcontext():  # stopped as the run ends
        interrupted, stopped = answer_pending(answer, remaining, width, recorder)
    return SessionResult(answered=tally.n - skipped, failed=tally.failed, skipped=skipped,
                         torn_bytes=torn, seconds=time.perf_counter() - started,
                         interrupted=interrupted, stopped=stopped,
                         bugs=tuple(tally.bugs))  # fmt: skip


def place_spacy(recipe: Recipe, width: int, models: ModelStore) -> None:
    """Tell ``models`` the spaCy workers a run of ``recipe`` at ``width`` places
    (:func:`spacy_placement`) and start them in the background, if it places any."""
    if placed := spacy_placement(recipe, width):
        models.spacy_workers = placed
        start_workers(spacy_stages(recipe.index), models)


def builds_ahead(
    recipe: Recipe,
    models: ModelStore,
    cache: IndexCache | None,
    remaining: Sequence[QAExample],
    width: int,
) -> BuildsAhead[Built] | None:
    """The builds ahead of their questions (:mod:`chainrag.run.ahead`) for a run of ``recipe``
    answering ``remaining`` ``width`` at a time, each over its own index: where more questions
    remain than are in flight, the LLM is not a local model (whose server needs the cores the
    builds would take) and the embedder is remote. With a local one the builds' CPU is the
    embedder's and bounds the run: building ahead bought nothing (docs/benchmarks.md §9). Up to
    ``width`` indexes beyond the questions in flight, one thread a core."""
    if width <= 1 or len(remaining) <= width or recipe.llm.kind == "local_gguf":
        return None
    if recipe.index is None or recipe.index.embedder is None:
        return None
    if not waits_on_network(recipe.index.embedder):
        return None
    return BuildsAhead(builder(recipe, models, cache), remaining, BUILDS, skip=width,
                       depth=width, threads=cores())  # fmt: skip


def spacy_placement(recipe: Recipe, width: int) -> int:
    """The spaCy worker processes a run of ``recipe`` with ``width`` questions in flight, each
    building its own index, places for its spaCy stages
    (:func:`~chainrag.components.index.spacy_workers.run_placement`)."""
    if recipe.index is None or recipe.index.embedder is None:
        return 0
    return run_placement(width, waits_on_network(recipe.index.embedder))


def tally_of(examples: Sequence[QAExample], records: Sequence[RunRecord]) -> Tally:
    """The running figures of the examples that have a line already."""
    tally, wanted = Tally(), {e.qid for e in examples}
    for record in (r for r in records if r.id in wanted):
        tally.add(record)
    return tally


def answer_pending(
    answer: Callable[[QAExample], RunRecord],
    remaining: Sequence[QAExample],
    width: int,
    recorder: _Recorder,
) -> tuple[str | None, ChainragError | None]:
    """``remaining`` answered ``width`` at a time, each settled by ``recorder`` as it finishes;
    returns the signal that ended the session (None) and the error that stopped the run
    (None): once one has, the questions not started are not (:class:`NotStartedError`)."""
    stopping: list[ChainragError] = []  # the error that stops the run, once one has

    def work(example: QAExample) -> RunRecord:
        if stopping:
            raise NotStartedError(example.qid)
        try:
            return answer(example)
        except ChainragError as exc:
            if stops_run(exc):
                stopping.append(exc)
            raise

    interrupted = None
    try:
        with recorder, QuestionPool(width) as pool:
            interrupted = _answer_all(pool, work, remaining, recorder.settle)
    except ChainragError as exc:
        if not stops_run(exc):
            raise
    return interrupted, stopping[0] if stopping else None


def guarded(state: RunState, work: Callable[[], T]) -> tuple[T, int]:
    """``work()`` over a cross-question ``state``: its result and the state's marker after it;
    if it fails, what it wrote goes with it (the state rolled back to its marker before)."""
    before = state.marker()
    try:
        done = work()
    except BaseException:
        state.rollback(before)
        raise
    return done, state.marker()


def with_state(
    answer: Callable[[QAExample], RunRecord], state: RunState
) -> Callable[[QAExample], RunRecord]:
    """``answer`` over a cross-question ``state`` (:func:`guarded`): a question that fails
    takes what it wrote with it, and each record carries the state's marker after its
    question."""

    def answered(example: QAExample) -> RunRecord:
        record, marker = guarded(state, lambda: answer(example))
        return attrs.evolve(record, state={state.name: marker})

    return answered


STATE_FILE = "state.json"
"""A run folder's cross-question state at the run's start, a marker per state, written by its
first session (what a resume rolls back to before any question is recorded)."""


def restored_state(
    recipe: Recipe, run: RunDir, records: Sequence[RunRecord], models: ModelStore
) -> RunState | None:
    """The method's cross-question state (:class:`~chainrag.protocols.parts.Stateful`),
    rolled back to what the last recorded question left (to the run's start when none is
    recorded), so that a question cut off part way leaves nothing; None without state."""
    method = recipe.method
    state = method.run_state(StageContext(models=models)) if isinstance(method, Stateful) else None
    if state is None:
        return None
    start_file = run.folder / STATE_FILE
    marked = [r.state[state.name] for r in records if r.state and state.name in r.state]
    if marked:
        state.rollback(marked[-1])
    elif start_file.is_file():
        try:
            start = int(json.loads(start_file.read_text(encoding="utf-8"))[state.name])
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
            raise RunError(
                f"{start_file}: not this run's state at its start ({type(exc).__name__}: {exc}); "
                "it is written by the run's first session: remove the run folder to start again"
            ) from None
        state.rollback(start)
    elif not records:
        write_json(start_file, {state.name: state.marker()})
    return state


class NotStartedError(RunStopError):
    """A question that was not started because an error had stopped the run."""


def stops_run(exc: BaseException) -> bool:
    """Whether ``exc`` is the run's failure, not one question's (:class:`RunStopError`: the managed
    server died twice, the LLM cannot answer at all)."""
    return isinstance(exc, RunStopError)


class _Recorder:
    """Writes each settled question's line (``predictions.jsonl`` or ``errors.jsonl``), counts
    it and reports progress; opened with the session, closed with it."""

    def __init__(self, run: RunDir, tally: Tally, total: int, progress: Progress | None) -> None:
        self.tally, self.total = tally, total
        self.report = progress or (lambda done, total, tally: None)
        self.report(tally.n, total, tally)
        self.records = LineWriter(run.predictions_path)
        self.errors = LineWriter(run.folder / ERRORS)

    def settle(self, example: QAExample, future: Future[RunRecord]) -> None:
        """Record ``example``'s answer, or its failure, whatever the exception."""
        try:
            record = future.result()
        except Exception as exc:  # one question's failure is its own, unless it stops the run
            if stops_run(exc):
                raise
            self.tally.failed += 1
            error = error_record(example, exc)
            if error.bug:
                self.tally.bugs.append(error)
            self.errors.append(error_line(error))
        else:
            self.records.append(record_line(record))
            self.tally.add(record)
        self.report(self.tally.n, self.total, self.tally)

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.records.close()
        self.errors.close()


def _answer_all(
    pool: QuestionPool,
    work: Callable[[QAExample], RunRecord],
    examples: Sequence[QAExample],
    settle: Callable[[QAExample, Future[RunRecord]], None],
) -> str | None:
    """Every example through ``work`` in ``pool``, each settled (in this thread) as it finishes.
    On Ctrl-C or SIGTERM the ones not started are cancelled and the ones in flight settled as
    they finish or fail (:func:`finish_in_flight`: a second signal stops at once); returns the
    name of the signal that ended the session then, else None. An error that stops the run
    (:func:`stops_run`) does the same, leaves the questions it stopped unrecorded, and is raised
    again."""
    futures = {pool.submit(work, example): example for example in examples}
    settled: set[Future[RunRecord]] = set()
    try:
        for future in as_completed(futures):
            with signals_held():  # a line is written whole and known written, or not at all
                settle(futures[future], future)
                settled.add(future)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: what is finished is kept
        for future in futures:
            future.cancel()
        flight = {f: e for f, e in futures.items() if not f.cancelled() and f not in settled}
        return finish_in_flight(pool, flight, settle, signal_name(exc))
    except Exception as exc:
        if not stops_run(exc):
            raise
        for future in futures:
            future.cancel()
        for future, example in futures.items():
            if not future.cancelled() and future not in settled:
                with contextlib.suppress(Exception):  # the stopped ones, left for the next run
                    settle(example, future)
        raise
    finally:
        for future in futures:  # whatever stopped the loop, nothing queued starts
            future.cancel()
    return None


def finish_in_flight(
    pool: QuestionPool,
    flight: dict[Future[RunRecord], QAExample],
    settle: Callable[[QAExample, Future[RunRecord]], None],
    first: str,
) -> str:
    """After a first signal (named ``first``): say what is waited for, and settle each question
    in ``flight`` as it finishes; returns ``first``. A second signal (Ctrl-C or SIGTERM) stops
    at once: the questions already finished are settled, the others abandoned in ``pool`` with
    no line (so the same command asks them again); returns the second's name."""
    if flight:
        notice(
            f"{first}: waiting for the {len(flight)} question(s) in flight to finish (kept as "
            "they do); Ctrl-C again, or SIGTERM, to stop now and leave them to the next run"
        )
    done: set[Future[RunRecord]] = set()
    try:
        for future in as_completed(flight):
            with signals_held():
                settle(flight[future], future)
                done.add(future)
    except KeyboardInterrupt as exc:
        pool.abandon()
        finished = [f for f in flight if f.done() and f not in done]
        for future in finished:
            settle(flight[future], future)
        left = len(flight) - len(done) - len(finished)
        notice(
            f"{signal_name(exc)}: stopped now; {left} question(s) in flight left unanswered, "
            "with no line: the same command asks them again"
        )
        return signal_name(exc)
    return first


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`~chainrag.core.errors.Interrupted`, a
    KeyboardInterrupt, so it ends a run as Ctrl-C does (a managed server is stopped by its
    ``with`` block either way)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
