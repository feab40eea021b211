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

By concern: :mod:`~chainrag.experiments.recurring.phases` runs the phases (the orchestration),
:mod:`~chainrag.experiments.recurring.folder` is the folder (its layout, its outcomes, the
folders of earlier versions), :mod:`~chainrag.experiments.recurring.command` the command's
entry point (a session in the folder, its end recorded) and
:mod:`~chainrag.experiments.recurring.table` the table.
"""

from chainrag.experiments.recurring.command import experiment, in_folder, session_end
from chainrag.experiments.recurring.folder import (
    EXPERIMENT,
    LEGACY_MANIFEST,
    MANIFEST,
    OUTCOMES,
    PARAPHRASES,
    PHASES,
    PHASES_DIR,
    RESERVOIR,
    Outcome,
    Phase,
    RecurringError,
    identity,
    open_folder,
    outcomes_in,
    phase_folder,
    phase_outcomes,
    read_outcome,
)
from chainrag.experiments.recurring.phases import (
    Ran,
    folder_paraphrases,
    paraphrase,
    paraphrases,
    run,
    run_phases,
    with_reservoir,
)
from chainrag.experiments.recurring.table import PhaseSummary, summary, table

__all__ = [
    "EXPERIMENT",
    "LEGACY_MANIFEST",
    "MANIFEST",
    "OUTCOMES",
    "PARAPHRASES",
    "PHASES",
    "PHASES_DIR",
    "RESERVOIR",
    "Outcome",
    "Phase",
    "PhaseSummary",
    "Ran",
    "RecurringError",
    "experiment",
    "folder_paraphrases",
    "identity",
    "in_folder",
    "open_folder",
    "outcomes_in",
    "paraphrase",
    "paraphrases",
    "phase_folder",
    "phase_outcomes",
    "read_outcome",
    "run",
    "run_phases",
    "session_end",
    "summary",
    "table",
    "with_reservoir",
]
