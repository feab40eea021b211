"""One way to read a run: its folder, its records, its recipe, its answers by name and its
walks, for every reader of finished runs (the report, the view, the analyses, the claims),
none of which opens a run folder's files itself.

    run = load_run(Path("docs/runs/musique/ansint"))     # run.json and the finished records
    runs = find_runs([Path("docs/runs")])                # every run folder below, in order
    records = predictions(folder)                        # the records, or a RunError naming it
    recipe = read_recipe(folder)                         # the stored recipe, plugins not loaded
    f1 = answer_f1(run, "cxtint")                        # question id -> F1 of one answer
    for step, walk in walks(record): ...                 # a record's walks, step by step

Everything here reads through the run folder (:class:`~chainrag.run.folder.RunDir`), whose
records carry their method's notes (a line written before they did gets them from the stored
recipe), and changes nothing: a torn last line is left where it is.

Layer: the record side of run: never the LLM layer nor the methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.types import Expansion, StepTrace
from chainrag.recipes.recipe import Recipe, check_recipe
from chainrag.run.files import RunError
from chainrag.run.folder import PREDICTIONS, RECIPE_FILE, RUN_FILE, RunDir
from chainrag.run.meta import RunMeta
from chainrag.run.record import RunRecord


@attrs.frozen
class Run:
    """A stored run: its directory, description and finished records."""

    folder: Path
    meta: RunMeta
    records: tuple[RunRecord, ...]
    failed: int

    @property
    def name(self) -> str:
        return self.meta.recipe_name

    @property
    def dataset(self) -> str:
        """The dataset, or ``DATASET@CORPUS`` for a run over a shared corpus index."""
        if self.meta.index is None:
            return self.meta.dataset
        from chainrag.index.corpus.store import corpus_label

        return f"{self.meta.dataset}@{corpus_label(self.meta.index.sources)}"

    @property
    def llm(self) -> str:
        return self.meta.models.llm.model


def load_run(folder: Path) -> Run:
    """Read a run directory without changing it (a torn last line is ignored, not cut)."""
    run = RunDir(folder)
    meta = run.meta()
    records, _ = run.records(repair=False)
    failed_ids = {e.id for e in run.errors()} - {r.id for r in records}
    return Run(folder, meta, tuple(records), len(failed_ids))


def run_folders(path: Path) -> list[Path]:
    """``path`` if it is a run folder, else the run folders below it (sorted); a RunError
    naming it if it is not a folder or holds no run."""
    if not path.is_dir():
        raise RunError(f"{path}: no such run directory")
    if (path / RUN_FILE).is_file():
        return [path]
    found = sorted(p.parent for p in path.rglob(RUN_FILE))
    if not found:
        raise RunError(f"{path}: no {RUN_FILE} in it or below it")
    return found


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Runs in the given folders: each folder is a run or holds runs below it (an experiment's
    folder below it, such as ``chainrag experiment recurring``'s, is not a run: left out)."""
    runs: list[Run] = []
    for path in paths:
        found = run_folders(path)
        loaded = [load_run(p) for p in found]
        if found == [path] and loaded[0].meta.experiment is not None:
            raise RunError(
                f"{path}: the {loaded[0].meta.experiment} experiment's folder, not a run; its "
                "results are its table.md"
            )
        runs.extend(run for run in loaded if run.meta.experiment is None)
    return runs


def predictions_file(folder: Path) -> Path:
    """The folder's predictions file; a RunError naming the folder if there is none."""
    path = folder / PREDICTIONS
    if not path.is_file():
        raise RunError(f"{folder}: no {PREDICTIONS} — no such file (not a run directory?)")
    return path


def predictions(folder: Path) -> list[RunRecord]:
    """The finished records of a run folder, read without changing it (a torn last line is
    ignored; :meth:`~chainrag.run.folder.RunDir.records`); a RunError naming the folder when
    it has no predictions file, no line yet, or a line that is not a record."""
    path = predictions_file(folder)
    records, _ = RunDir(folder).records(repair=False)
    if not records:
        raise RunError(f"{path}: no predictions yet")
    return records


def read_recipe(folder: Path) -> Recipe:
    """The run's stored recipe, its plugins not imported; a RunError saying why it cannot be
    read (a plugin's components among them)."""
    path = folder / RECIPE_FILE
    try:
        checked = check_recipe(path, load_plugins=False)
    except (ChainragError, OSError) as exc:
        raise RunError(f"{path} cannot be read: {exc}") from None
    if checked.recipe is None:
        raise RunError(f"{path} names components of plugins not loaded")
    return checked.recipe


def variants_of(run: Run) -> list[str]:
    """The answer variants of a run's records, the primary one first."""
    return list(dict.fromkeys(v for r in run.records for v in r.answers))


def answer_f1(run: Run, variant: str) -> dict[str, float]:
    """Question id -> F1 of one answer variant of a run, in the records' order."""
    return {r.id: r.answers[variant].f1 for r in run.records if variant in r.answers}


def answer_by_kind(record: RunRecord, kind: str) -> str | None:
    """The text of the answer the record's first integrator of ``kind`` (``ans_int``) gave,
    found by the name its method's notes give it; None where it has none."""
    notes = record.trace.notes
    name = notes.answer_of(kind) if notes is not None else None
    found = [a.answer.text for a in record.trace.answers if a.name == name]
    return found[0] if found else None


def walks(record: RunRecord) -> list[tuple[StepTrace, Expansion]]:
    """The record's walks (each step that expanded, with its expansion), in the steps' order."""
    return [(step, step.expansion) for step in record.trace.steps if step.expansion is not None]


def all_walks(records: Sequence[RunRecord]) -> list[Expansion]:
    """Every walk of ``records``, question by question."""
    return [walk for record in records for _, walk in walks(record)]
