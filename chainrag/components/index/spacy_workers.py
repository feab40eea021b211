"""spaCy in worker processes that live as long as the run, for a run that answers questions
in threads with its embedder remote.

A threaded run (``--concurrency`` > 1) builds many small question indexes at once. spaCy
holds the GIL while it splits and tags, so in one process its work and everything else the run
does (the LLM client, the graph) take turns on one core however many there are: with the LLM,
the embedder and the reranker remote, NER was 48% of the run's CPU and the two cores were 37%
busy (docs/benchmarks.md §9). ``nlp.pipe(n_process=...)`` does not serve here: it starts its
processes again at every call, which for a question's few hundred sentences costs more than
it saves and, forked from a threaded process, can deadlock.

A :class:`SpacyWorkers` is a pool of processes forked from a fork server that has imported
spaCy (:data:`PRELOAD`), started as the run starts, each holding the pipelines it was asked
for, loaded once (the splitter's and the NER's); a call sends its texts to one of them whole
(or cut into one piece a worker when it is large) and waits, its thread's GIL released
meanwhile. What comes back is plain tuples (the sentences' or the mentions' text and offsets),
not spaCy ``Doc`` objects, so little crosses the pipe. The workers ignore SIGINT: the run's own
interrupt handling stops them with the run; and each ends as soon as the process that started
it has, however it ended (SIGKILL included).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.util
import json
import math
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver
from types import ModuleType
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs

from chainrag.core.context import ModelStore
from chainrag.core.device import cores
from chainrag.core.errors import ChainragError
from chainrag.protocols.parts import InProcesses

R = TypeVar("R")


class _NoTorchInThisThread(importlib.abc.MetaPathFinder):
    """A finder that makes ``import torch`` fail in one thread (the one importing spaCy), and
    only there: another thread's import of torch meanwhile goes on as always."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname.partition(".")[0] == "torch" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"torch hidden while spaCy is imported: {fullname}")


def import_spacy() -> ModuleType:
    """spaCy, imported without thinc's torch support where nothing can use it: torch not
    imported yet in this process and ``spacy-transformers`` not installed.

    thinc imports torch as it is imported (``thinc.compat``) for the pipelines whose models are
    PyTorch's (spacy-transformers'); chainrag's pipelines (``en_core_web_sm``) are thinc's own
    and never touch it. Without torch, importing spaCy and loading ``en_core_web_sm`` took 2.0
    CPU seconds and 167 MiB instead of 3.5 and 347 MiB (2-core AMD EPYC), in each process that
    does (the run's, the workers' fork server): a run whose encoders are remote now imports
    torch nowhere. torch can still be imported later (a local embedder); thinc goes on without
    it, which changes nothing for a thinc pipeline (tests/test_spacy_processes.py)."""
    decided = "thinc.compat" in sys.modules or "torch" in sys.modules  # a spaCy import began
    if decided or importlib.util.find_spec("spacy_transformers") is not None:
        import spacy  # waits for another thread's import of it to end, as any import does

        return spacy
    hide = _NoTorchInThisThread()
    sys.meta_path.insert(0, hide)
    try:
        import spacy
    finally:
        sys.meta_path.remove(hide)
    return spacy


def loaded(model: str, keep: tuple[str, ...]) -> Any:
    """The spaCy pipeline ``model`` with only the pipes in ``keep`` enabled (``senter`` added
    as a rule-based ``sentencizer`` where the model has none)."""
    nlp = import_spacy().load(model)
    for name in list(nlp.pipe_names) + list(nlp.disabled):
        if name not in keep:
            nlp.remove_pipe(name)
    for name in keep:
        if name in nlp.disabled:
            nlp.enable_pipe(name)
    if "senter" in keep and "senter" not in nlp.pipe_names:
        nlp.add_pipe("sentencizer")
    return nlp


def worker_processes(workers: int | None, placed_by_run: int) -> int:
    """How many worker processes a stage's ``workers`` field stands for: its value where set
    (0: none, the work stays in this process), else (``null``) what the run placed
    (``placed_by_run``: :func:`run_placement`)."""
    return placed_by_run if workers is None else workers


def run_placement(threads: int, remote_embedder: bool) -> int:
    """The worker processes a run places for spaCy stages that leave theirs unset: one a
    usable core (at most one a thread) where it answers questions in ``threads`` > 1 on more
    than one core and its embedder is remote, else none. With a local embedder the build's CPU
    is the embedder's, in this process, and workers bought nothing: 42.4 s against 42.1 s for
    30 musique questions at 16 in flight, with 0.7 GiB more resident memory; with a remote one
    the wall time fell from 31.0 to 28.2 s (docs/benchmarks.md §9)."""
    if threads <= 1 or cores() <= 1 or not remote_embedder:
        return 0
    return min(cores(), threads)


def build_placement() -> int:
    """The worker processes a corpus index build in this process places for spaCy stages that
    leave theirs unset: one a usable core, where there is more than one, else none. Its
    splitting and NER batches otherwise go through ``nlp.pipe(n_process=...)``, which starts its
    processes again at every batch (every few seconds) and sends whole ``Doc`` objects back for
    this process to unpack; the workers start once and send plain tuples: docs/benchmarks.md
    §5 has the build's seconds both ways."""
    return cores() if cores() > 1 else 0


@contextlib.contextmanager
def workers_placed(stages: Sequence[object], models: ModelStore, processes: int) -> Iterator[None]:
    """``models`` with ``processes`` workers placed for the spaCy stages among ``stages`` that
    leave theirs unset (:func:`worker_processes`): the workers started now (with the stages'
    pipelines loaded in the fork server) and stopped as the block ends."""
    models.spacy_workers = processes
    n = placed(stages, processes)
    if not n:
        yield
        return
    start_fork_server(pipelines_of(stages))
    workers = workers_for(models, n)
    try:
        yield
    finally:
        workers.pool.shutdown(wait=True, cancel_futures=True)


@runtime_checkable
class SpacyPipeline(Protocol):
    """A stage that runs one spaCy pipeline: its model and the pipes it keeps."""

    @property
    def pipeline(self) -> tuple[str, tuple[str, ...]]: ...


PIPELINES_ENV = "CHAINRAG_SPACY_PIPELINES"
"""The pipelines the fork server loads as it starts, as JSON (the server takes no argument but
the modules it imports: :mod:`~chainrag.components.index.spacy_preload` reads this)."""

PRELOAD = [__name__, "chainrag.components.index.spacy_preload"]
"""What the workers' fork server imports once, before it forks each worker: spaCy
(:func:`import_spacy`) and the run's pipelines, paid once a run, not once a worker."""


_pipeline = functools.cache(loaded)
"""A worker's pipelines, each loaded at its first job (unused in the run's own process)."""


def _start(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with, args=(parent,), name="end-with-parent", daemon=True).start()
    import_spacy()  # the slow part of a worker's start-up, done before its first job


def _end_with(parent: int) -> None:
    """End this worker as soon as the process ``parent`` that started it has ended. A worker
    holds both ends of its task queue, so it never reads the end of it: without this, a run or
    a build killed with SIGKILL left its workers, and the fork server they keep alive, waiting
    for ever (tests/test_spacy_processes.py)."""
    try:
        watched = os.pidfd_open(parent)
    except (AttributeError, OSError):  # no pidfd (not Linux), or the parent is gone already
        while _alive(parent):
            time.sleep(1.0)
    else:
        select.select([watched], [], [])  # readable once the process has ended
    os._exit(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or its pid now another user's
        return False
    return True


def _run(
    job: tuple[str, tuple[str, ...], int], extract: Callable[[Any], R], texts: Sequence[str]
) -> list[R]:
    model, keep, batch_size = job
    return [extract(doc) for doc in _pipeline(model, keep).pipe(texts, batch_size=batch_size)]


class WorkersStoppedError(ChainragError, RuntimeError):
    """A worker process of spaCy's stopped before it answered."""


@attrs.frozen
class SpacyWorkers:
    """``processes`` processes, forked from the fork server, that each load a spaCy pipeline
    the first time a call asks for it; :meth:`map` runs a function over the docs of some texts
    in them. One a run and core count, in its model store (:func:`workers_for`); safe to call
    from many threads."""

    pool: ProcessPoolExecutor
    processes: int

    @classmethod
    def start(cls, processes: int) -> SpacyWorkers:
        """The processes, started now (not at the first call, so that their start-up overlaps
        the run's own)."""
        start_fork_server()
        context = multiprocessing.get_context("forkserver")
        pool = ProcessPoolExecutor(processes, context, _start, (os.getpid(),))
        for _ in range(processes):
            pool.submit(int)  # each submit while none is idle spawns one more process
        return cls(pool, processes)

    def map(
        self,
        extract: Callable[[Any], R],
        job: tuple[str, tuple[str, ...], int],
        texts: Sequence[str],
    ) -> list[R]:
        """``extract(doc)`` for the doc of each of ``texts`` through the pipeline ``model``
        with the pipes in ``keep`` (``job`` is ``(model, keep, batch_size)``), in order,
        computed in the workers: ``extract`` must be a module-level function and its result
        picklable. A job of more than ``batch_size`` texts a worker is cut into one piece a
        worker."""
        if not texts:
            return []
        size, batch_size = len(texts), job[2]
        if size > batch_size * self.processes:
            size = math.ceil(len(texts) / self.processes)
        pieces = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        try:
            futures = [self.pool.submit(_run, job, extract, piece) for piece in pieces]
            return [found for future in futures for found in future.result()]
        except BrokenProcessPool as exc:
            raise WorkersStoppedError(
                "spaCy's worker processes stopped before they answered. A script that runs "
                "questions in threads, or builds a corpus index, must keep its own work under "
                "`if __name__ == "
                '"__main__":` (Python starts the workers by importing it again); or set the '
                "spaCy stages' workers to 0 (index.splitter.workers=0 index.ner.workers=0), "
                "which keeps spaCy in this process"
            ) from exc


def workers_for(models: ModelStore, processes: int) -> SpacyWorkers:
    """The run's ``processes`` spaCy worker processes, started at the first call."""
    return models.get(("spacy-workers", processes), lambda: SpacyWorkers.start(processes))


def placed(stages: Iterable[object], placed_by_run: int) -> int:
    """The worker processes the spaCy stages among ``stages`` (those that are
    :class:`~chainrag.protocols.parts.InProcesses`) use where the run placed
    ``placed_by_run``."""
    found = (worker_processes(s.workers, placed_by_run)
             for s in stages if isinstance(s, InProcesses))  # fmt: skip
    return max(found, default=0)


def start_fork_server(pipelines: Iterable[tuple[str, tuple[str, ...]]] = ()) -> None:
    """Start the workers' fork server now, importing :data:`PRELOAD` in its own process while
    this one goes on, and loading ``pipelines`` (model, pipes kept) there too, so that every
    worker forked from it starts with them (shared, copy-on-write): called as soon as a run is
    known to need workers, it has usually done so by the first build. Once started, it stays."""
    wanted = sorted({(model, tuple(keep)) for model, keep in pipelines})
    multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    os.environ[PIPELINES_ENV] = json.dumps(wanted)  # read by spacy_preload, in the server
    try:
        forkserver.ensure_running()
    finally:
        del os.environ[PIPELINES_ENV]


def pipelines_of(stages: Iterable[object]) -> list[tuple[str, tuple[str, ...]]]:
    """The spaCy pipelines (model, pipes kept) that ``stages`` run."""
    return [s.pipeline for s in stages if isinstance(s, SpacyPipeline)]


def start_workers(stages: Iterable[object], models: ModelStore) -> None:
    """Start, in the background, the worker processes that the spaCy stages among ``stages``
    will use with ``models``, so that their start-up overlaps what the run does before its first
    build instead of delaying it (a build that needs them meanwhile waits for them)."""
    if n := placed(stages, models.spacy_workers):
        threading.Thread(target=workers_for, args=(models, n), daemon=True).start()
