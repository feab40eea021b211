"""Runs already made of a recipe on a dataset, whatever LLM answered them: where
``chainrag run --estimate`` finds a paid model's tokens a question without a call.

    found = stored_run(planned, roots=(planned.job.out, SHIPPED_RUNS))
    found.records, found.llm          # questions answered by real calls; who answered them

A run's prompts depend on its recipe and its questions far more than on its model, so a run
folder holding the same recipe as far as its answers go but for its ``llm:``
(:meth:`~chainrag.run.folder.RunDir.same_recipe`) on the same dataset (its name, file
fingerprint, setting and corpus index) tells how many tokens a question takes. Folders are
looked for where ``chainrag run`` puts them, ``ROOT/<dataset folder>/<recipe name>/``, under
each root; the repository's ``docs/runs`` (:data:`SHIPPED_RUNS`) holds such runs of the
shipped recipes on the shipped datasets. Reads, never writes; a folder that cannot be read as
a run is not one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from chainrag.core.errors import ChainragError
from chainrag.recipes.recipe import Recipe
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.meta import LLMIdentity, RunIdentity, RunMeta
from chainrag.run.record import RunRecord

SHIPPED_RUNS = Path(__file__).resolve().parents[2] / "docs" / "runs"
"""The runs the repository ships (absent from an installed package)."""


@attrs.frozen
class StoredRun:
    """A run folder of the recipe on the dataset: its questions answered by real calls (a
    question answered partly from the response cache has no tokens to count: ``left_out``),
    and the LLM that answered them."""

    folder: Path
    llm: LLMIdentity
    records: tuple[RunRecord, ...]
    left_out: int = 0


def same_data(meta: RunMeta, identity: RunIdentity) -> bool:
    """Whether ``meta``'s run was made on ``identity``'s dataset: its name, file fingerprint,
    setting and corpus index (a run of ``chainrag run``, not an experiment's folder)."""
    index = None if meta.index is None else meta.index.key()
    wanted = None if identity.index is None else identity.index.key()
    return (
        meta.experiment is None
        and (meta.dataset, meta.dataset_fingerprint) == (identity.dataset,
                                                         identity.dataset_fingerprint)
        and meta.dataset_setting == identity.dataset_setting
        and index == wanted
    )  # fmt: skip


def stored_runs(
    recipe: Recipe, identity: RunIdentity, slug: str, roots: Sequence[Path]
) -> list[StoredRun]:
    """The run folders ``ROOT/<slug>/*`` of ``recipe`` but its ``llm:`` on ``identity``'s
    dataset with a question or more answered by real calls, the one with the most first."""
    found = [
        run for folder in candidates(roots, slug) if (run := read_stored(folder, recipe, identity))
    ]
    return sorted(found, key=lambda run: -len(run.records))


def candidates(roots: Sequence[Path], slug: str) -> list[Path]:
    """The run folders under ``ROOT/<slug>/`` of each root, each once."""
    found: dict[Path, Path] = {}
    for parent in (root / slug for root in roots):
        if parent.is_dir():
            for folder in sorted(parent.iterdir()):
                if (folder / RUN_FILE).is_file():
                    found.setdefault(folder.resolve(), folder)
    return list(found.values())


def read_stored(folder: Path, recipe: Recipe, identity: RunIdentity) -> StoredRun | None:
    """``folder``'s run if it is one of ``recipe`` but its ``llm:`` on ``identity``'s dataset
    with a question or more answered by real calls; None otherwise."""
    run = RunDir(folder)
    try:
        meta = run.meta()
        if not same_data(meta, identity) or not run.same_recipe(recipe, but_llm=True):
            return None
        records, _ = run.records()
    except (ChainragError, OSError):
        return None
    measured = tuple(r for r in records if r.usage.cache_hits == 0 and r.usage.calls > 0)
    if not measured:
        return None
    return StoredRun(folder, meta.models.llm, measured, left_out=len(records) - len(measured))
