"""Runs already made of a recipe on a dataset, whatever LLM answered them: where
``chainrag run --estimate`` finds a paid model's tokens a question without a call.

    found = stored_runs(recipe, identity, "musique", stored_roots(Path("runs")))
    found[0].records, found[0].llm    # questions answered by real calls; who answered them

A run's prompts depend on its recipe and its questions far more than on its model, so a run
folder holding the same recipe as far as its answers go but for its ``llm:``
(:meth:`~chainrag.run.folder.RunDir.same_recipe`) on the same dataset (its name, file
fingerprint, setting and corpus index) tells how many tokens a question takes. Folders are
looked for where ``chainrag run`` puts them, ``ROOT/<dataset folder>/<recipe name>/``, under
each root in turn (:func:`stored_roots`: ``--out-dir``, the working folder's ``docs/runs``, then
the package's, :data:`SHIPPED_RUNS`, which holds runs of the shipped recipes on the shipped
datasets). Reads, never writes; a folder that cannot be read as a run is not one.
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


def stored_roots(out: Path, shipped: Path = SHIPPED_RUNS) -> tuple[Path, ...]:
    """Where stored runs are looked for, in this order: ``out`` (``--out-dir``), the working
    folder's ``docs/runs`` (a checkout, or a project of one's own laid out so), then the
    package's (``shipped``); a folder named twice is read once, at its first place."""
    return out, Path.cwd() / "docs" / "runs", shipped


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
    dataset with a question or more answered by real calls: those of the first root that has
    any first, and within a root the one with the most first."""
    found = [(place, run) for place, folder in candidates(roots, slug)
             if (run := read_stored(folder, recipe, identity))]  # fmt: skip
    return [run for _, run in sorted(found, key=lambda pair: (pair[0], -len(pair[1].records)))]


def candidates(roots: Sequence[Path], slug: str) -> list[tuple[int, Path]]:
    """The run folders under ``ROOT/<slug>/`` of each root, each once (at the first root that
    holds it), with the root's place in ``roots``."""
    found: dict[Path, tuple[int, Path]] = {}
    for place, parent in enumerate(root / slug for root in roots):
        if parent.is_dir():
            for folder in sorted(parent.iterdir()):
                if (folder / RUN_FILE).is_file():
                    found.setdefault(folder.resolve(), (place, folder))
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
