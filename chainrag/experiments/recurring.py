"""Shi et al.'s recurring-question experiment: what the knowledge reservoir saves.

N questions are asked once with an empty reservoir (which fills it), then asked again — the
same words, and paraphrased by the LLM — with the reservoir and, as the reference, without it
(always retrieving). For each phase: F1, EM, seconds per question (the question's index is
built beforehand, so this is the method's own time and the index read from the cache, the
same in every phase), external knowledge items per question (units retrieved from the index;
a query the trigger serves from memory retrieves none), and the share of questions with at
least one query served from memory. The paper (τ = 1.0 vs 0.6, θ = 3) reports −46% time on
recurring questions (7.45 s → 3.97 s), 15.00 → 4.39 external items per question, and 53.5% →
53.0% hit rate (its answer-accuracy measure; we give F1/EM).

An experiment folder is a run folder (:class:`~chainrag.run.folder.RunDir`): ``run.json``
(recipe and digest, dataset file and fingerprint, the questions, package versions, models, one
entry per session, and ``experiment: recurring``) and ``recipe.yaml``; then
``paraphrases.json``, ``reservoir.sqlite``, ``phases/`` and at the end ``table.md``. Each phase
is a run of :func:`chainrag.run.session.run_recipe` into its own run folder under ``phases/``
(its ``run.json``, ``recipe.yaml`` with the phase's reservoir, ``predictions.jsonl``,
``errors.jsonl``, ``state.json``), the recipe's method with its reservoir in the folder's
``reservoir.sqlite`` or with none; the table is read from those records. The reservoir is the
cross-question state the method declares (:class:`~chainrag.protocols.parts.Stateful`), which
a run records and rolls back: each record carries its marker, a question that fails takes its
writes with it, and a phase cut off mid-way resumes over the reservoir its recorded questions
left. Phases run in order, each starting where the one before it ended, and a phase whose
questions are all answered is not run again (its run would roll the reservoir back to its own
end, taking the later phases' items with it).
Started again on the same folder, :func:`in_folder` resumes as a run does: the folder locked,
``run.json`` checked to describe this experiment, each phase's answered questions kept and a
torn last line cut (:mod:`chainrag.run.files`). A folder made before the experiment ran its
phases as runs (``outcomes.jsonl``, one line per question and phase; or older still,
``experiment.json``) reads back to its table (:func:`outcomes_in`) but is not resumed.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from chainrag.components.reasoning.answer_form import clean_answer
from chainrag.core.context import Context, ModelStore
from chainrag.core.credentials import redact
from chainrag.core.errors import ChainragError, Interrupted, signal_name
from chainrag.core.types import QAExample
from chainrag.data.names import dataset_path
from chainrag.experiments.shares import grouped
from chainrag.index.build import IndexCache
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.llm import LLM
from chainrag.protocols.parts import RunState, Stateful, StateInFile
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import RunError, finished, locked, write_json
from chainrag.run.folder import ERRORS, RUN_FILE, RunDir
from chainrag.run.meta import RunIdentity, SessionEnd
from chainrag.run.question import searchable_index
from chainrag.run.record import RecordError, RunRecord, structured
from chainrag.run.session import STATE_FILE, SessionResult

if TYPE_CHECKING:
    from chainrag.llm.cache import CacheMode

PAPER_TIME_CHANGE = -0.467
PAPER_SECONDS = (7.45, 3.97)
PAPER_HIT_RATE = (0.535, 0.530)
PAPER_EXTERNAL_ITEMS = (15.00, 4.39)
"""Shi et al. (its Table 2 as the authors' repository reports it): τ = 1.0 vs 0.6, θ = 3."""


@attrs.frozen
class Outcome:
    phase: str
    qid: str
    question: str
    answer: str
    em: float
    f1: float
    seconds: float
    retrievals: int
    from_memory: bool
    calls: int
    reservoir_last_id: int = 0
    """The reservoir's newest item id once this question was done (what a resume rolls back to)."""


@attrs.frozen
class Phase:
    name: str
    questions: str  # "original" | "paraphrased"
    memory: bool
    folder: str
    """Its run folder's name under the experiment's ``phases/``."""


PHASES = (
    Phase("first ask (fills the reservoir)", "original", True, "1-first-ask"),
    Phase("asked again, with the reservoir", "original", True, "2-again-reservoir"),
    Phase("asked again, no reservoir", "original", False, "3-again-no-reservoir"),
    Phase("paraphrased, with the reservoir", "paraphrased", True, "4-paraphrased-reservoir"),
    Phase("paraphrased, no reservoir", "paraphrased", False, "5-paraphrased-no-reservoir"),
)


class RecurringError(ChainragError):
    """The recipe cannot run this experiment."""


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


def run(
    recipe: Recipe,
    dataset: str,
    examples: Sequence[QAExample],
    llm: LLM,
    folder: Path,
    *,
    reworded: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> list[Outcome]:
    """Every phase over ``examples`` (of ``dataset``), each a run folder under ``folder``
    (``phases/``, :func:`phase_folder`) run by :func:`chainrag.run.session.run_recipe` over
    the reservoir ``folder/reservoir.sqlite``; returns the outcomes of every phase.

    A phase starts where the one before it ended: its run records the reservoir's marker at
    its start and after each question, so a phase cut off is resumed over the reservoir the
    questions before it left. A phase whose questions are all answered is not run again (its
    run would roll the reservoir back to its own last question, taking the later phases'
    items with it); one with a question that failed stops the experiment (the later phases
    build on its reservoir). A new experiment starts from an empty reservoir. ``reworded``
    maps question ids to their paraphrases (made with ``llm`` when not given);
    ``progress(done, total, phase)`` is told after each question.
    """
    from chainrag.run.jobs import run_into

    # absolute: the method resolves a relative reservoir path against the cache folder, this
    # function against the working directory; both must name the same file
    folder = folder.resolve()
    reservoir = folder / RESERVOIR
    models, cache = ModelStore(), IndexCache()
    check_reservoir(recipe, folder, models)
    for example in examples:  # built beforehand: a phase times its method, not a build
        searchable_index(recipe, example, models, cache)
    if reworded is None:
        reworded = paraphrases(examples, llm)
    total, before = len(examples) * len(PHASES), 0
    for phase in PHASES:
        run_dir = RunDir(phase_folder(folder, phase))
        if answered(run_dir) < len(examples):
            asked = [asked_in(phase, e, reworded) for e in examples]
            phased = with_reservoir(recipe, reservoir if phase.memory else None)
            known = identity(phased, dataset, asked)
            told = _told(progress, before, total, phase)
            result = run_into(phased, None, run_dir.folder, dataset, asked, llm, width=1,
                              slots=None, cache=cache, models=models, identity=known,
                              experiment=EXPERIMENT, progress=told)  # fmt: skip
            _raise_if_stopped(result, phase, run_dir)
        before += answered(run_dir)
    return phase_outcomes(folder)


def answered(run_dir: RunDir) -> int:
    """The questions with a line in a phase's run folder (none where it is not made yet)."""
    return len(run_dir.records()[0]) if run_dir.predictions_path.exists() else 0


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


def _raise_if_stopped(result: SessionResult, phase: Phase, run_dir: RunDir) -> None:
    """Raise what ended a phase's session before all its questions were answered: the signal,
    the run's error, or a :class:`RecurringError` for questions that failed."""
    if result.interrupted is not None:
        signum = signal.Signals[result.interrupted]
        raise Interrupted(signum) if signum != signal.SIGINT else KeyboardInterrupt
    if result.stopped is not None:
        raise result.stopped
    if result.failed:
        raise RecurringError(
            f"{phase.name}: {result.failed} question(s) failed ({run_dir.folder / ERRORS}); "
            "the phases after it build on its reservoir, so the experiment stops here: run it "
            "again to ask them again"
        )


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


def phase_folder(folder: Path, phase: Phase) -> Path:
    """The run folder of ``phase`` in the experiment's ``folder``."""
    return folder / PHASES_DIR / phase.folder


def phase_outcomes(folder: Path) -> list[Outcome]:
    """The outcomes recorded in the phases' run folders of ``folder``, phase by phase, each
    with the reservoir's marker after it (a phase without the reservoir leaves it as it was)."""
    outcomes: list[Outcome] = []
    marker = 0
    for phase in PHASES:
        run_dir = RunDir(phase_folder(folder, phase))
        for record in run_dir.records()[0] if answered(run_dir) else []:
            marker = next(iter((record.state or {}).values()), marker)
            outcomes.append(outcome_of(phase, record, marker))
    return outcomes


def outcomes_in(folder: Path) -> list[Outcome]:
    """The outcomes stored in an experiment's ``folder``: its phases' run folders, or the
    ``outcomes.jsonl`` of a folder an earlier chainrag made."""
    if (folder / OUTCOMES).exists():
        return finished(folder / OUTCOMES, read_outcome, repair=False)[0]
    return phase_outcomes(folder)


def asked_in(phase: Phase, example: QAExample, reworded: Mapping[str, str]) -> QAExample:
    """``example`` as ``phase`` asks it: in its own words, or paraphrased."""
    if phase.questions == "paraphrased":
        return attrs.evolve(example, question=reworded[example.qid])
    return example


def outcome_of(phase: Phase, record: RunRecord, marker: int) -> Outcome:
    """What one answered question of ``phase`` records: its scores, its time, the external
    knowledge it retrieved, and the reservoir's marker after it."""
    answer, steps = record.scored, record.trace.steps
    return Outcome(
        phase.name, record.id, record.question, answer.text, answer.em, answer.f1,
        record.seconds, retrievals=sum(len(s.retrieved) for s in steps if not s.from_memory),
        from_memory=any(s.from_memory for s in steps), calls=record.trace.usage.calls,
        reservoir_last_id=marker,
    )  # fmt: skip


def reservoir_state(recipe: Recipe, reservoir: Path, models: ModelStore) -> RunState:
    """The reservoir at ``reservoir`` as the cross-question state the recipe's method declares
    (:class:`~chainrag.protocols.parts.Stateful`), opened in ``models``, where the method's
    questions find the same one."""
    method = with_reservoir(recipe, reservoir).method
    state = method.run_state(Context(models=models)) if isinstance(method, Stateful) else None
    if state is None:
        raise RecurringError(f"recipe {recipe.name!r}: its method declares no reservoir state")
    return state


def paraphrases(examples: Sequence[QAExample], llm: LLM) -> dict[str, str]:
    """Each question's paraphrase, by question id."""
    return {e.qid: paraphrase(e.question, llm) for e in examples}


# --------------------------------------------------------------------------- the folder

MANIFEST = RUN_FILE
OUTCOMES = "outcomes.jsonl"
"""The outcomes of a folder an earlier chainrag made (one line per question and phase): read
back for its table, not resumed."""
PHASES_DIR = "phases"
PARAPHRASES = "paraphrases.json"
RESERVOIR = "reservoir.sqlite"
EXPERIMENT = "recurring"
"""The experiment's name in its folder's ``run.json`` (:attr:`RunMeta.experiment`), and in
its phases' run folders'."""
LEGACY_MANIFEST = "experiment.json"
"""The description an experiment folder had before it was a run folder: such a folder reads
back (its outcomes and table), but is not resumed."""


def identity(recipe: Recipe, dataset: str, examples: Sequence[QAExample]) -> RunIdentity:
    """What a resume must find unchanged: the recipe, the dataset file and the questions."""
    known = RunIdentity.of(recipe, dataset, dataset_path(dataset)[0])
    return attrs.evolve(known, questions=tuple(e.qid for e in examples))


def open_folder(
    folder: Path,
    recipe: Recipe,
    dataset: str,
    examples: Sequence[QAExample],
    recipe_path: Path | None = None,
) -> list[Outcome]:
    """Prepare ``folder`` for this experiment: the outcomes already recorded there.

    The folder is a run folder (:class:`~chainrag.run.folder.RunDir`): a new one gets its
    ``run.json`` and ``recipe.yaml``; an existing one must hold the same experiment (recipe
    digest, dataset file, questions), else a :class:`RecurringError` names what differs; each
    call is a session in its ``run.json``. ``recipe_path``: the recipe's file, recorded there.
    """
    from chainrag.run.jobs import server_session

    for old in (LEGACY_MANIFEST, OUTCOMES):
        if (folder / old).exists():
            raise RecurringError(
                f"{folder} was made by an earlier chainrag ({old}): its outcomes and table.md "
                "read back, but it is not resumed; pass another --out-dir"
            )
    if not (folder / MANIFEST).exists() and (
        (folder / PHASES_DIR).exists() or (folder / RESERVOIR).exists()
    ):
        raise RecurringError(
            f"{folder} has phases or a reservoir but no {MANIFEST}: it was not made by this "
            "version; pass another --out-dir"
        )
    folder.mkdir(parents=True, exist_ok=True)
    known = identity(recipe, dataset, examples)
    mode, build = server_session(recipe.llm)
    try:
        RunDir(folder).start(
            recipe, recipe_path, dataset, known.dataset_file, prompt_cache=mode,
            llama_build=build, identity=known, experiment=EXPERIMENT,
        )  # fmt: skip
    except RunError as exc:
        raise RecurringError(f"{folder} holds another recurring experiment ({exc})") from None
    return phase_outcomes(folder)


def read_outcome(data: Any) -> Outcome:
    """The outcome of one ``outcomes.jsonl`` line; a RecordError for any other line (an outcome
    written before ``reservoir_last_id`` existed cannot be resumed from)."""
    if isinstance(data, Mapping) and "reservoir_last_id" not in data:
        raise RecordError(
            f"required key missing @ outcome.reservoir_last_id (fields {sorted(data)})"
        )
    return structured(data, Outcome, "outcome")


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


Progress = Callable[[int, int, str], None]
"""``progress(done, total, phase)``: question-phases done of all, and the phase of the last one
("" at the start)."""


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
    """The experiment in ``folder`` (see the module docstring), resumed where it stopped:
    each phase's answers are durable lines of its run folder as they are done, and
    ``table.md`` is written at the end; the session's end (question-phases answered, or the
    signal or error that stopped it) goes into ``run.json``. The LLM is opened
    (``with open_llm() as llm``) once the folder is known to hold this experiment."""
    report = progress or (lambda done, total, phase: None)
    with locked(folder):
        done = len(open_folder(folder, recipe, dataset, examples, recipe_path))
        total = len(examples) * len(PHASES)
        report(done, total, "")
        with _Session(folder, done) as session, open_llm() as llm:
            reworded = folder_paraphrases(folder, examples, llm)

            def told(now: int, total: int, phase: str) -> None:
                if now > done + session.answered:
                    session.answered = now - done
                    report(now, total, phase)

            outcomes = run(recipe, dataset, examples, llm, folder, reworded=reworded,
                           progress=told)  # fmt: skip
        (folder / "table.md").write_text(table(outcomes, dataset) + "\n", encoding="utf-8")
    return outcomes


class _Session:
    """One session of the experiment in its folder: on leaving, its end goes into
    ``run.json``: the question-phases answered, and the signal (Ctrl-C, SIGTERM) or the error
    that stopped it, if one did (each phase's run folder records its own sessions)."""

    def __init__(self, folder: Path, resumed_from: int) -> None:
        self.folder, self.resumed_from = folder, resumed_from
        self.answered = 0
        self.started = time.perf_counter()

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> None:
        interrupted = signal_name(exc) if isinstance(exc, KeyboardInterrupt) else None
        stopped = None
        if isinstance(exc, Exception):
            stopped = redact(f"{type(exc).__name__}: {exc}")
        RunDir(self.folder).finish_session(SessionEnd(
            finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), answered=self.answered, failed=0,
            resumed_from=self.resumed_from, wall_s=round(time.perf_counter() - self.started, 1),
            torn_bytes_repaired=0, interrupted=interrupted, stopped=stopped,
        ))  # fmt: skip


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


@attrs.frozen
class PhaseSummary:
    """One phase's means over its questions: F1, EM and share using memory in %, seconds,
    external knowledge items and LLM calls per question."""

    phase: str
    n: int
    f1: float
    em: float
    seconds: float
    retrievals: float
    from_memory: float
    calls: float


def summary(outcomes: Sequence[Outcome]) -> list[PhaseSummary]:
    """Each phase with outcomes, in :data:`PHASES` order."""
    rows = []
    for phase, mine in grouped(outcomes, lambda o: o.phase, [p.name for p in PHASES]):
        n = len(mine)
        rows.append(PhaseSummary(
            phase, n, f1=100 * sum(o.f1 for o in mine) / n,
            em=100 * sum(o.em for o in mine) / n, seconds=sum(o.seconds for o in mine) / n,
            retrievals=sum(o.retrievals for o in mine) / n,
            from_memory=100 * sum(o.from_memory for o in mine) / n,
            calls=sum(o.calls for o in mine) / n,
        ))  # fmt: skip
    return rows


def table(outcomes: Sequence[Outcome], dataset: str) -> str:
    rows = summary(outcomes)
    lines = [
        f"Recurring questions on {dataset} ({rows[0].n if rows else 0} questions)", "",
        "| phase | F1 | EM | s/q | external items/q | used memory % | LLM calls/q |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r.phase} | {r.f1:.2f} | {r.em:.2f} | {r.seconds:.2f} | "
            f"{r.retrievals:.2f} | {r.from_memory:.0f} | {r.calls:.1f} |"
        )
    by = {r.phase: r for r in rows}
    for kind in ("asked again", "paraphrased"):
        on = by.get(f"{kind}, with the reservoir")
        off = by.get(f"{kind}, no reservoir")
        if on and off and off.seconds > 0:
            change = (on.seconds - off.seconds) / off.seconds
            saved = off.retrievals - on.retrievals
            lines.append(
                f"\n{kind}: time {100 * change:+.1f}% with the reservoir, "
                f"{saved:.2f} external knowledge items saved per question, "
                f"F1 {on.f1 - off.f1:+.2f} points"
            )
    lines.append(
        f"\nSeed 004 reports (its Table 2, as the authors' repository gives it): time "
        f"{100 * PAPER_TIME_CHANGE:+.1f}% ({PAPER_SECONDS[0]} s → {PAPER_SECONDS[1]} s), "
        f"external items {PAPER_EXTERNAL_ITEMS[0]:.2f} → {PAPER_EXTERNAL_ITEMS[1]:.2f} per "
        "question (τ = 1.0 → 0.6), "
        f"hit rate {100 * PAPER_HIT_RATE[0]:.1f}% → {100 * PAPER_HIT_RATE[1]:.1f}% "
        "(AmbigNQ, web search, a fine-tuned Gemma-2B; not comparable one to one)."
    )
    return "\n".join(lines)
