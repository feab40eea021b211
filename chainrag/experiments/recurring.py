"""Shi et al.'s recurring-question experiment: what the knowledge reservoir saves.

N questions are asked once with an empty reservoir (which fills it), then asked again — the
same words, and paraphrased by the LLM — with the reservoir and, as the reference, without it
(always retrieving). For each phase: F1, EM, seconds per question (the question's index is
built beforehand, so this is the method's own time), external knowledge items per question
(units retrieved from the index; a query the trigger serves from memory retrieves none), and
the share of questions with at least one query served from memory. The paper (τ = 1.0 vs 0.6,
θ = 3) reports −46% time on recurring questions (7.45 s → 3.97 s), 15.00 → 4.39 external
items per question, and 53.5% → 53.0% hit rate (its answer-accuracy measure; we give F1/EM).

An experiment folder is a run folder (:class:`~chainrag.run.folder.RunDir`): ``run.json``
(recipe and digest, dataset file and fingerprint, the questions, package versions, models, one
entry per session, and ``experiment: recurring``) and ``recipe.yaml``; then
``paraphrases.json``, ``outcomes.jsonl`` (one line per question and phase, written as each is
done, in place of ``predictions.jsonl``), ``reservoir.sqlite`` and at the end ``table.md``.
Started again on the same folder, :func:`in_folder` resumes as a run does: the folder locked,
``run.json`` checked to describe this experiment, the outcomes recorded kept and a torn last
line cut (:mod:`chainrag.run.files`). The reservoir is the cross-question state the method
declares (:class:`~chainrag.protocols.parts.RunState`), handled as a run handles it
(:func:`chainrag.run.session.guarded`): each outcome records its marker, a question that fails
takes its writes with it, and a resume rolls the reservoir back to the last recorded marker
(removing what a question cut off mid-way had written), so the question in flight is asked
again exactly as it would have been. A folder made before the experiment was a run folder
(``experiment.json``) reads back but is not resumed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from chainrag.components.answer_form import clean_answer
from chainrag.core.context import Context, ModelStore
from chainrag.core.credentials import redact
from chainrag.core.errors import ChainragError, signal_name
from chainrag.core.types import Prediction, QAExample
from chainrag.data.metrics import qa_scores
from chainrag.data.names import dataset_path
from chainrag.experiments.shares import grouped
from chainrag.index.build import IndexCache
from chainrag.llm.prompts import load_prompt
from chainrag.protocols.llm import LLM
from chainrag.protocols.parts import RunState, Stateful, StateInFile
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import LineWriter, RunError, finished, locked, write_json
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.meta import RunIdentity, SessionEnd
from chainrag.run.question import answer_question, searchable_index
from chainrag.run.record import RecordError, plain, structured
from chainrag.run.session import guarded

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


PHASES = (
    Phase("first ask (fills the reservoir)", "original", True),
    Phase("asked again, with the reservoir", "original", True),
    Phase("asked again, no reservoir", "original", False),
    Phase("paraphrased, with the reservoir", "paraphrased", True),
    Phase("paraphrased, no reservoir", "paraphrased", False),
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
    examples: Sequence[QAExample],
    llm: LLM,
    reservoir: Path,
    *,
    done: Sequence[Outcome] = (),
    reworded: Mapping[str, str] | None = None,
    resume: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """All phases over ``examples``; returns ``done`` followed by the new outcomes.

    ``done`` are the outcomes recorded so far, in order: each (phase, question) among them is
    skipped. With ``done`` or ``resume`` (the reservoir file is this experiment's own), the
    reservoir is first rolled back to the newest item id the last of them recorded (to empty
    when none is), removing what a question cut off mid-way had written. Otherwise the
    reservoir must be empty or not exist yet. ``reworded`` maps question ids to their
    paraphrases (made with ``llm`` when not given).
    """
    # absolute: the method resolves a relative reservoir path against the cache folder, this
    # function against the working directory; both must name the same file
    reservoir = reservoir.resolve()
    models, cache = ModelStore(), IndexCache()
    state = restored_reservoir(recipe, reservoir, models, done, resume=resume)
    indexes = {e.qid: searchable_index(recipe, e, models, cache) for e in examples}
    if reworded is None:
        reworded = paraphrases(examples, llm)
    finished = {(o.phase, o.qid) for o in done}
    outcomes = list(done)
    for phase in PHASES:
        phased = with_reservoir(recipe, reservoir if phase.memory else None)
        for example in examples:
            if (phase.name, example.qid) in finished:
                continue
            asked = asked_in(phase, example, reworded)
            started = time.perf_counter()
            prediction, marker = guarded(state, partial(
                answer_question, phased, asked, llm, models=models, index=indexes[example.qid]
            ))  # fmt: skip
            seconds = time.perf_counter() - started
            outcome = outcome_of(phase, example, asked, prediction, seconds, marker)
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
    return outcomes


def asked_in(phase: Phase, example: QAExample, reworded: Mapping[str, str]) -> QAExample:
    """``example`` as ``phase`` asks it: in its own words, or paraphrased."""
    if phase.questions == "paraphrased":
        return attrs.evolve(example, question=reworded[example.qid])
    return example


def outcome_of(
    phase: Phase,
    example: QAExample,
    asked: QAExample,
    prediction: Prediction,
    seconds: float,
    marker: int,
) -> Outcome:
    """What one answered question of ``phase`` records: its scores against ``example``'s
    answers, its time, the external knowledge it retrieved, and the reservoir's marker."""
    em, f1 = qa_scores(prediction.answer, example.answers)
    return Outcome(
        phase.name, example.qid, asked.question, prediction.answer, em, f1, seconds,
        retrievals=sum(len(s.retrieved) for s in prediction.steps if not s.from_memory),
        from_memory=any(s.from_memory for s in prediction.steps), calls=prediction.usage.calls,
        reservoir_last_id=marker,
    )  # fmt: skip


def restored_reservoir(
    recipe: Recipe, reservoir: Path, models: ModelStore, done: Sequence[Outcome], *, resume: bool
) -> RunState:
    """The reservoir as :func:`run` starts over it: rolled back to the last of ``done``'s
    markers (to empty when none is) with ``done`` or ``resume``, else checked to be empty."""
    if done and not reservoir.exists():
        raise RecurringError(
            f"{reservoir} is missing, but {len(done)} outcomes are recorded: the reservoir "
            "they filled is gone, so the experiment cannot resume; start it in a new folder"
        )
    state = reservoir_state(recipe, reservoir, models)
    if done or resume:
        state.rollback(done[-1].reservoir_last_id if done else 0)
    elif state.marker():
        raise RecurringError(
            f"{reservoir} holds items (the newest is #{state.marker()}): the experiment "
            "starts from an empty reservoir"
        )
    return state


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
PARAPHRASES = "paraphrases.json"
RESERVOIR = "reservoir.sqlite"
EXPERIMENT = "recurring"
"""The experiment's name in its folder's ``run.json`` (:attr:`RunMeta.experiment`)."""
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
) -> tuple[list[Outcome], int]:
    """Prepare ``folder`` for this experiment: the outcomes already recorded there, and the
    bytes of a torn last outcome line it cut.

    The folder is a run folder (:class:`~chainrag.run.folder.RunDir`): a new one gets its
    ``run.json`` and ``recipe.yaml``; an existing one must hold the same experiment (recipe
    digest, dataset file, questions), else a :class:`RecurringError` names what differs; each
    call is a session in its ``run.json``. ``recipe_path``: the recipe's file, recorded there.
    """
    from chainrag.run.jobs import server_session

    if (folder / LEGACY_MANIFEST).exists() and not (folder / MANIFEST).exists():
        raise RecurringError(
            f"{folder} was made by an earlier chainrag ({LEGACY_MANIFEST}): its outcomes and "
            "table.md read back, but it is not resumed; pass another --out-dir"
        )
    if not (folder / MANIFEST).exists() and (
        (folder / OUTCOMES).exists() or (folder / RESERVOIR).exists()
    ):
        raise RecurringError(
            f"{folder} has outcomes or a reservoir but no {MANIFEST}: it was not made by this "
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
    return finished(folder / OUTCOMES, read_outcome, repair=True)


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
    each outcome is a durable line of ``outcomes.jsonl`` as it is done, and ``table.md`` is
    written at the end; the session's end (outcomes recorded, or the signal or error that
    stopped it) goes into ``run.json``. The LLM is opened (``with open_llm() as llm``) once the
    folder is known to hold this experiment."""
    report = progress or (lambda done, total, phase: None)
    with locked(folder):
        done, torn = open_folder(folder, recipe, dataset, examples, recipe_path)
        total = len(examples) * len(PHASES)
        report(len(done), total, "")
        with (
            _Session(folder, len(done), torn) as session,
            open_llm() as llm,
            LineWriter(folder / OUTCOMES) as writer,
        ):
            reworded = folder_paraphrases(folder, examples, llm)

            def record(outcome: Outcome) -> None:
                writer.append(plain(outcome))
                session.answered += 1
                report(len(done) + session.answered, total, outcome.phase)

            outcomes = run(recipe, examples, llm, folder / RESERVOIR, done=done,
                           reworded=reworded, resume=True, on_outcome=record)  # fmt: skip
        (folder / "table.md").write_text(table(outcomes, dataset) + "\n", encoding="utf-8")
    return outcomes


class _Session:
    """One session of the experiment in its folder: on leaving, its end goes into
    ``run.json``: the outcomes recorded, and the signal (Ctrl-C, SIGTERM) or the error that
    stopped it, if one did."""

    def __init__(self, folder: Path, resumed_from: int, torn: int) -> None:
        self.folder, self.resumed_from, self.torn = folder, resumed_from, torn
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
            torn_bytes_repaired=self.torn, interrupted=interrupted, stopped=stopped,
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
