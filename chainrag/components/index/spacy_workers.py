"""spaCy in worker processes that live as long as the run, for a run that answers questions
in threads.

A threaded run (``--concurrency`` > 1) builds many small question indexes at once. spaCy
holds the GIL while it splits and tags, so in one process its work and everything else the run
does (the LLM client, the graph) take turns on one core however many there are: with the LLM,
the embedder and the reranker remote, NER was 48% of the run's CPU and the two cores were 37%
busy (docs/benchmarks.md §9). ``nlp.pipe(n_process=...)`` does not serve here: it starts its
processes again at every call, which for a question's few hundred sentences costs more than
it saves and, forked from a threaded process, can deadlock.

A :class:`SpacyWorkers` is a pool of spawned processes, each holding the pipeline loaded once;
a call sends its texts to one of them whole (or cut into one piece a worker when it is large)
and waits, its thread's GIL released meanwhile. What comes back is plain tuples (the sentences'
or the mentions' text and offsets), not spaCy ``Doc`` objects, so little crosses the pipe. The
workers ignore SIGINT: the run's own interrupt handling stops them with the run.
"""

from __future__ import annotations

import math
import multiprocessing
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

import attrs

from chainrag.core.context import ModelStore
from chainrag.core.device import cores

R = TypeVar("R")

_NLP: Any = None
"""The pipeline of the worker process this module runs in (set by :func:`_start`); unused in
the run's own process."""


def loaded(model: str, keep: tuple[str, ...]) -> Any:
    """The spaCy pipeline ``model`` with only the pipes in ``keep`` enabled (``senter`` added
    as a rule-based ``sentencizer`` where the model has none)."""
    import spacy

    nlp = spacy.load(model)
    for name in list(nlp.pipe_names) + list(nlp.disabled):
        if name not in keep:
            nlp.remove_pipe(name)
    for name in keep:
        if name in nlp.disabled:
            nlp.enable_pipe(name)
    if "senter" in keep and "senter" not in nlp.pipe_names:
        nlp.add_pipe("sentencizer")
    return nlp


def worker_processes(workers: int | None, models: ModelStore) -> int:
    """How many worker processes a stage's ``workers`` field stands for: its value where set
    (0: none, the work stays in this process), else (``null``) one a usable core when more
    than one thread shares ``models`` and there is more than one core, at most one a thread."""
    if workers is not None:
        return workers
    if models.threads <= 1 or cores() <= 1:
        return 0
    return min(cores(), models.threads)


def _start(model: str, keep: tuple[str, ...]) -> None:
    global _NLP
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _NLP = loaded(model, keep)


def _run(extract: Callable[[Any], R], texts: Sequence[str], batch_size: int) -> list[R]:
    return [extract(doc) for doc in _NLP.pipe(texts, batch_size=batch_size)]


@attrs.frozen
class SpacyWorkers:
    """``processes`` spawned processes holding the spaCy pipeline ``model`` with the pipes in
    ``keep``; :meth:`map` runs a function over the docs of some texts in them. One a run, in its
    model store (:func:`workers_for`); safe to call from many threads."""

    pool: ProcessPoolExecutor
    processes: int

    @classmethod
    def start(cls, model: str, keep: tuple[str, ...], processes: int) -> SpacyWorkers:
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(processes, context, _start, (model, keep))
        return cls(pool, processes)

    def map(self, extract: Callable[[Any], R], texts: Sequence[str], batch_size: int) -> list[R]:
        """``extract(doc)`` for the doc of each of ``texts``, in order, computed in the
        workers: ``extract`` must be a module-level function and its result picklable. A job
        of more than ``batch_size`` texts a worker is cut into one piece a worker."""
        if not texts:
            return []
        size = len(texts)
        if size > batch_size * self.processes:
            size = math.ceil(len(texts) / self.processes)
        pieces = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        futures = [self.pool.submit(_run, extract, piece, batch_size) for piece in pieces]
        return [found for future in futures for found in future.result()]


def workers_for(
    models: ModelStore, model: str, keep: tuple[str, ...], processes: int
) -> SpacyWorkers:
    """The run's worker processes for ``model`` with ``keep``, started at the first call."""
    key = ("spacy-workers", model, keep, processes)
    return models.get(key, lambda: SpacyWorkers.start(model, keep, processes))
