"""The recurring-question experiment's folder: its layout (a run folder whose phases are run
folders below it, the reservoir, the paraphrases), the outcomes it holds (read back from the
phases' records, or from the ``outcomes.jsonl`` of a folder an earlier chainrag made) and its
opening (``run.json`` checked to describe this experiment).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.types import QAExample
from chainrag.data.names import dataset_path
from chainrag.recipes.recipe import Recipe
from chainrag.run.files import RunError, finished
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.meta import RunIdentity
from chainrag.run.record import RecordError, RunRecord, structured

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


class RecurringError(ChainragError):
    """The recipe cannot run this experiment."""


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


def phase_folder(folder: Path, phase: Phase) -> Path:
    """The run folder of ``phase`` in the experiment's ``folder``."""
    return folder / PHASES_DIR / phase.folder


def answered(run_dir: RunDir) -> int:
    """The questions with a line in a phase's run folder (none where it is not made yet)."""
    return len(run_dir.records()[0]) if run_dir.predictions_path.exists() else 0


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


def read_outcome(data: Any) -> Outcome:
    """The outcome of one ``outcomes.jsonl`` line; a RecordError for any other line (an outcome
    written before ``reservoir_last_id`` existed cannot be resumed from)."""
    if isinstance(data, Mapping) and "reservoir_last_id" not in data:
        raise RecordError(
            f"required key missing @ outcome.reservoir_last_id (fields {sorted(data)})"
        )
    return structured(data, Outcome, "outcome")


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

    refuse_other_versions(folder)
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


def refuse_other_versions(folder: Path) -> None:
    """A :class:`RecurringError` for a folder an earlier chainrag made (its outcomes read back,
    but it is not resumed) or one with phases or a reservoir but no ``run.json``."""
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
