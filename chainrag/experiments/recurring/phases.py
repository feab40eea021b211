"""The recurring-question experiment's phases, run in order over one reservoir: each a run of
:func:`chainrag.run.session.run_recipe` into its own run folder below the experiment's, the
recipe's method with the folder's reservoir or with none; the paraphrases the later phases ask.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from chainrag.components.reasoning.answer_form import clean_answer
from chainrag.core.context import Context, ModelStore
from chainrag.core.errors import Interrupted
from chainrag.core.types import QAExample
from chainrag.experiments.recurring.folder import (
    EXPERIMENT,
    PARAPHRASES,
    PHASES,
    RESERVOIR,
    Outcome,
    Phase,
    RecurringError,
    answered,
    identity,
    phase_folder,
    phase_outcomes,
)
from chainrag.index.build import IndexCache
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.llm import LLM
from chainrag.protocols.parts import RunState, Stateful, StateInFile
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import write_json
from chainrag.run.folder import ERRORS, RunDir
from chainrag.run.question import searchable_index
from chainrag.run.session import STATE_FILE, SessionResult

Progress = Callable[[int, int, str], None]
"""``progress(done, total, phase)``: question-phases done of all, and the phase of the last one
("" at the start)."""


def with_reservoir(recipe: Recipe, path: Path | None) -> Recipe:
    """``recipe`` with its method's reservoir set to ``path`` (None: no memory): a method whose
    cross-question state is a file (:class:`~chainrag.protocols.parts.StateInFile`)."""
    if not isinstance(recipe.method, StateInFile):
        raise RecurringError(
            f"recipe {recipe.name!r} has method {type(recipe.method).__name__}, which keeps no "
            "knowledge reservoir; the recurring experiment needs four_module "
            "(recipes/seeds/four_module.yaml)"
        )
    method = recipe.method.state_in(None if path is None else str(path))
    return attrs.evolve(recipe, method=method)


def paraphrase(question: str, llm: LLM) -> str:
    """The question in other words (the LLM's), or the question itself if the reply is empty."""
    reply = llm.complete(load_prompt("paraphrase").request(question=question))
    return clean_answer(reply.text) or question


def paraphrases(examples: Sequence[QAExample], llm: LLM) -> dict[str, str]:
    """Each question's paraphrase, by question id."""
    return {e.qid: paraphrase(e.question, llm) for e in examples}


def folder_paraphrases(folder: Path, examples: Sequence[QAExample], llm: LLM) -> dict[str, str]:
    """The paraphrases stored in ``folder``, made (and stored) for the questions lacking one."""
    path = folder / PARAPHRASES
    stored: dict[str, str] = {}
    if path.exists():
        try:
            stored = dict(json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError) as exc:
            raise RecurringError(f"{path}: not a JSON object of paraphrases ({exc})") from None
    missing = [e for e in examples if e.qid not in stored]
    if missing:
        stored.update(paraphrases(missing, llm))
        write_json(path, stored)
    return {e.qid: stored[e.qid] for e in examples}


def asked_in(phase: Phase, example: QAExample, reworded: Mapping[str, str]) -> QAExample:
    """``example`` as ``phase`` asks it: in its own words, or paraphrased."""
    if phase.questions == "paraphrased":
        return attrs.evolve(example, question=reworded[example.qid])
    return example


@attrs.frozen
class Ran:
    """What :func:`run_phases` did: the outcomes of every phase recorded so far, the
    question-phases it answered, and, where a phase's session ended before its questions were
    all answered, that phase and its session's result as the run gave it."""

    outcomes: list[Outcome]
    answered: int
    stopped_in: Phase | None = None
    session: SessionResult | None = None


def run_phases(
    recipe: Recipe, dataset: str, examples: Sequence[QAExample], llm: LLM, folder: Path,
    reworded: Mapping[str, str], progress: Progress | None = None,
) -> Ran:  # fmt: skip
    """Every phase over ``examples`` (of ``dataset``), each a run folder under ``folder``
    (:func:`~chainrag.experiments.recurring.folder.phase_folder`) over the reservoir
    ``folder/reservoir.sqlite``, until one's session ends before its questions are answered.

    A phase starts where the one before it ended: its run records the reservoir's marker at
    its start and after each question, so a phase cut off is resumed over the reservoir the
    questions before it left. A phase whose questions are all answered is not run again (its
    run would roll the reservoir back to its own last question, taking the later phases'
    items with it); one with a question that failed stops the experiment (the later phases
    build on its reservoir). A new experiment starts from an empty reservoir. ``reworded``
    maps question ids to their paraphrases; ``progress(done, total, phase)`` is told after
    each question.
    """
    from chainrag.run.jobs import RunOptions, run_into

    # absolute: the method resolves a relative reservoir path against the cache folder, this
    # function against the working directory; both must name the same file
    folder = folder.resolve()
    models, cache = ModelStore(), IndexCache()
    check_reservoir(recipe, folder, models)
    for example in examples:  # built beforehand: a phase times its method, not a build
        searchable_index(recipe, example, models, cache)
    total, before, done = len(examples) * len(PHASES), 0, 0
    for phase in PHASES:
        run_dir = RunDir(phase_folder(folder, phase))
        if answered(run_dir) < len(examples):
            asked = [asked_in(phase, e, reworded) for e in examples]
            phased = with_reservoir(recipe, folder / RESERVOIR if phase.memory else None)
            options = RunOptions(cache=cache, models=models, experiment=EXPERIMENT,
                                 identity=identity(phased, dataset, asked),
                                 progress=_told(progress, before, total, phase))  # fmt: skip
            result = run_into(phased, None, run_dir.folder, dataset, asked, llm, options)
            done += result.answered
            if result.interrupted or result.stopped is not None or result.failed:
                return Ran(phase_outcomes(folder), done, phase, result)
        before += answered(run_dir)
    return Ran(phase_outcomes(folder), done)


def run(
    recipe: Recipe, dataset: str, examples: Sequence[QAExample], llm: LLM, folder: Path, *,
    reworded: Mapping[str, str] | None = None, progress: Progress | None = None,
) -> list[Outcome]:  # fmt: skip
    """The outcomes of every phase (:func:`run_phases`; paraphrases made with ``llm`` where
    ``reworded`` does not give them); what ended a phase before its questions were answered
    is raised (:func:`raise_stopped`)."""
    if reworded is None:
        reworded = paraphrases(examples, llm)
    ran = run_phases(recipe, dataset, examples, llm, folder, reworded, progress)
    raise_stopped(ran, folder)
    return ran.outcomes


def raise_stopped(ran: Ran, folder: Path) -> None:
    """Raise what ended a phase's session before all its questions were answered, for the
    command: the signal, the run's error, or a :class:`RecurringError` for questions that
    failed; nothing where every phase ran to its end."""
    result, phase = ran.session, ran.stopped_in
    if result is None or phase is None:
        return
    if result.interrupted is not None:
        signum = signal.Signals[result.interrupted]
        raise Interrupted(signum) if signum != signal.SIGINT else KeyboardInterrupt
    if result.stopped is not None:
        raise result.stopped
    raise RecurringError(
        f"{phase.name}: {result.failed} question(s) failed "
        f"({phase_folder(folder, phase) / ERRORS}); the phases after it build on its "
        "reservoir, so the experiment stops here: run it again to ask them again"
    )


def _told(
    progress: Progress | None, before: int, total: int, phase: Phase
) -> Callable[[str, int, int, dict[str, str]], None] | None:
    """A phase run's progress as the experiment's: question-phases done of all."""
    if progress is None:
        return None
    report = progress

    def told(label: str, done: int, of: int, postfix: dict[str, str]) -> None:
        report(before + done, total, phase.name)

    return told


def check_reservoir(recipe: Recipe, folder: Path, models: ModelStore) -> None:
    """A new experiment in ``folder`` starts from an empty reservoir, and a begun one needs
    its reservoir; a :class:`RecurringError` otherwise."""
    reservoir = folder / RESERVOIR
    begun = [RunDir(phase_folder(folder, p)) for p in PHASES if p.memory]
    recorded = sum(answered(r) for r in begun)
    if recorded and not reservoir.exists():
        raise RecurringError(
            f"{reservoir} is missing, but {recorded} outcomes are recorded: the reservoir "
            "they filled is gone, so the experiment cannot resume; start it in a new folder"
        )
    if not (begun[0].folder / STATE_FILE).exists():
        state = reservoir_state(recipe, reservoir, models)
        if state.marker():
            raise RecurringError(
                f"{reservoir} holds items (the newest is #{state.marker()}): the experiment "
                "starts from an empty reservoir"
            )


def reservoir_state(recipe: Recipe, reservoir: Path, models: ModelStore) -> RunState:
    """The reservoir at ``reservoir`` as the cross-question state the recipe's method declares
    (:class:`~chainrag.protocols.parts.Stateful`), opened in ``models``, where the method's
    questions find the same one."""
    method = with_reservoir(recipe, reservoir).method
    state = method.run_state(Context(models=models)) if isinstance(method, Stateful) else None
    if state is None:
        raise RecurringError(f"recipe {recipe.name!r}: its method declares no reservoir state")
    return state
