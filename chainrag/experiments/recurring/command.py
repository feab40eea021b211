"""``chainrag experiment recurring``: the experiment in its folder, resumed where it stopped,
each session's end recorded in the folder's ``run.json`` from what its phases' runs gave."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from chainrag.core.credentials import redact
from chainrag.core.errors import signal_name
from chainrag.core.types import QAExample
from chainrag.experiments.recurring.folder import PHASES, Outcome, open_folder
from chainrag.experiments.recurring.phases import (
    Progress,
    Ran,
    folder_paraphrases,
    raise_stopped,
    run_phases,
    with_reservoir,
)
from chainrag.experiments.recurring.table import table
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import locked
from chainrag.run.folder import RunDir
from chainrag.run.meta import SessionEnd

if TYPE_CHECKING:
    from chainrag.llm.cache import CacheMode


def in_folder(
    folder: Path,
    recipe: Recipe,
    dataset: str,
    examples: Sequence[QAExample],
    open_llm: Callable[[], AbstractContextManager[LLM]],
    *,
    progress: Progress | None = None,
    recipe_path: Path | None = None,
) -> list[Outcome]:
    """The experiment in ``folder`` (see the package docstring), resumed where it stopped:
    each phase's answers are durable lines of its run folder as they are done, and
    ``table.md`` is written at the end. The session's end goes into ``run.json``: the
    question-phases answered and, from the result of the phase's run that ended early, the
    questions that failed or the signal or error that stopped it (:func:`session_end`); what
    stopped it is then raised for the command. The LLM is opened (``with open_llm() as llm``)
    once the folder is known to hold this experiment."""
    report = progress or (lambda done, total, phase: None)
    with locked(folder):
        done = len(open_folder(folder, recipe, dataset, examples, recipe_path))
        total = len(examples) * len(PHASES)
        report(done, total, "")
        started, answered = time.perf_counter(), [0]

        def told(now: int, total: int, phase: str) -> None:
            if now > done + answered[0]:
                answered[0] = now - done
                report(now, total, phase)

        try:
            with open_llm() as llm:
                reworded = folder_paraphrases(folder, examples, llm)
                ran = run_phases(recipe, dataset, examples, llm, folder, reworded, told)
        except BaseException as exc:  # no phase's result: what stopped it, as it was raised
            cut = Ran([], answered[0])
            RunDir(folder).finish_session(session_end(done, started, cut, raised=exc))
            raise
        RunDir(folder).finish_session(session_end(done, started, ran))
        raise_stopped(ran, folder)
        (folder / "table.md").write_text(table(ran.outcomes, dataset) + "\n", encoding="utf-8")
    return ran.outcomes


def session_end(
    resumed_from: int, started: float, ran: Ran | None = None, raised: BaseException | None = None
) -> SessionEnd:
    """The end of one session of the experiment: the question-phases ``ran`` answered and, as
    its phase's run gave them, the questions that failed and the signal or error that ended it;
    or, with no phase's result, the signal (Ctrl-C, SIGTERM) or the error ``raised``."""
    session = ran.session if ran is not None else None
    interrupted = session.interrupted if session is not None else None
    stopped = session.stopped if session is not None else None
    said = redact(str(stopped)) if stopped is not None else None
    if isinstance(raised, KeyboardInterrupt):
        interrupted = signal_name(raised)
    elif isinstance(raised, Exception):
        said = redact(f"{type(raised).__name__}: {raised}")
    return SessionEnd(
        finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        answered=ran.answered if ran is not None else 0,
        failed=session.failed if session is not None else 0,
        resumed_from=resumed_from, wall_s=round(time.perf_counter() - started, 1),
        torn_bytes_repaired=0, interrupted=interrupted, stopped=said,
    )  # fmt: skip


def experiment(
    folder: Path, recipe: Recipe, dataset: str, limit: int, *, cache_mode: CacheMode = "refresh",
    progress: Progress | None = None, recipe_path: Path | None = None,
) -> list[Outcome]:  # fmt: skip
    """``chainrag experiment recurring``: the first ``limit`` questions of ``dataset`` in
    ``folder`` (:func:`in_folder`), the LLM ``recipe``'s own with its response cache;
    ``recipe_path``: the file ``recipe`` was read from."""
    from chainrag.core.paths import llm_cache_path
    from chainrag.data.datasets import load_dataset
    from chainrag.llm import open_llm

    with_reservoir(recipe, None)  # checks the method
    examples = load_dataset(dataset, limit)

    def llm() -> AbstractContextManager[LLM]:
        return open_llm(recipe.llm, cache_path=llm_cache_path(), cache_mode=cache_mode)

    return in_folder(folder, recipe, dataset, examples, llm, progress=progress,
                     recipe_path=recipe_path)  # fmt: skip
