"""chainrag from Python — a notebook or a script — doing what the command line does, typed.

    import chainrag

    recipe = chainrag.load_recipe("recipes/chainrag/ansint.yaml")   # a typed Recipe
    runs = chainrag.run("recipes/chainrag/ansint.yaml", "musique", limit=5)
    for record in runs[0].records:                                  # typed RunRecords
        print(record.question, record.answers["cxtint"].text, record.answers["cxtint"].f1)
    print(chainrag.report(runs))                                    # chainrag report's tables
    answer = chainrag.ask("recipes/chainrag/ansint.yaml", "Who founded the company that made X?",
                          [("Title", "A paragraph."), ("Other title", "Another one.")])
    print(answer.text)

:func:`run` writes the same run folders as ``chainrag run`` (resumable: the same call again
continues where a stopped one ended, a finished one returns at once) and returns each one's
finished records; :func:`report` renders the same markdown as ``chainrag report``. Everything is
imported on the first call, so ``import chainrag`` loads no model and no heavy package.

Layer: the top of the library, below the CLI only: it may import every other layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import attrs

if TYPE_CHECKING:
    from chainrag.core.types import Prediction
    from chainrag.recipes.recipe import Recipe
    from chainrag.report.runs import Run

__all__ = ["Answer", "ask", "load_recipe", "report", "run"]

CacheMode = Literal["use", "bypass", "refresh"]


def load_recipe(path: str | Path) -> Recipe:
    """A recipe file loaded, its ``base:`` files resolved and every field checked (a
    RecipeError naming each problem otherwise); its plugins are imported."""
    from chainrag.recipes.recipe import load_recipe as load

    return load(path)


def run(
    recipes: str | Path | Sequence[str | Path],
    dataset: str | Sequence[str],
    *,
    limit: int | None = None,
    out: str | Path = "runs",
    concurrency: int | None = None,
    cache_mode: CacheMode = "use",
    index: str | Path | None = None,
    progress: bool = True,
) -> list[Run]:
    """Answer a dataset's questions with each recipe, as ``chainrag run`` does, and return the
    runs with their finished records.

    Args:
        recipes: One recipe file or several.
        dataset: A dataset name (``musique``, ``long:2wiki``, ``hotpotqa[0:30]``; ``chainrag
            datasets`` lists them) or your own file's path, or several.
        limit: The first N questions only.
        out: The folder the run folders go under (``OUT/DATASET/RECIPE``).
        concurrency: Questions in flight (default: the recipe's ``llm.concurrency``).
        cache_mode: The LLM response cache: ``use``, ``bypass`` or ``refresh``.
        index: A corpus index folder (``chainrag index``) to answer every question over.
        progress: Show a progress bar per run.

    Returns:
        One :class:`~chainrag.report.runs.Run` per recipe and dataset: its folder, its
        ``run.json`` (``meta``), its finished records (``records``: typed
        :class:`~chainrag.run.record.RunRecord`) and how many questions failed (``failed``;
        their errors are in the folder's ``errors.jsonl``, and the same call tries them again).
    """
    from chainrag.core.progress import Progress
    from chainrag.report.runs import find_runs
    from chainrag.run.jobs import run_grid
    from chainrag.run.plan import plan_grid

    paths = [Path(recipes)] if isinstance(recipes, (str, Path)) else [Path(r) for r in recipes]
    names = [dataset] if isinstance(dataset, str) else list(dataset)
    grid = plan_grid(paths, names, out=Path(out), limit=limit, concurrency=concurrency,
                     cache_mode=cache_mode, index=Path(index) if index else None)  # fmt: skip
    if progress:
        with Progress("q") as bars:
            results = run_grid(grid, progress=bars)
    else:
        results = run_grid(grid)
    return find_runs([r.folder for r in results])


def report(runs: Iterable[Run | str | Path], *, baselines: Sequence[str] = ()) -> str:
    """``chainrag report``'s markdown for runs (as :func:`run` returns them) or run folders
    (each a run or a folder holding runs): per dataset the methods' table beside the paper's,
    with 95% intervals; with ``baselines`` (recipe names), each answer's paired difference
    from the first of them."""
    from chainrag.report import find_runs, markdown
    from chainrag.report.runs import Run as StoredRun

    given = list(runs)
    folders = [Path(r) for r in given if not isinstance(r, StoredRun)]
    stored = [r for r in given if isinstance(r, StoredRun)] + find_runs(folders)
    return markdown(stored, baselines=baselines)


@attrs.frozen
class Answer:
    """What :func:`ask` answers: the method's answers by name (ChainRAG's ``ansint`` and
    ``cxtint``; the first is the primary), its typed trace (sub-questions, evidence, LLM
    usage), and the texts of the units (sentences or chunks) the trace's unit numbers index."""

    answers: dict[str, str]
    trace: Prediction
    units: tuple[str, ...]

    @property
    def text(self) -> str:
        """The primary answer."""
        return next(iter(self.answers.values()), "")


def ask(
    recipe: str | Path | Recipe,
    question: str,
    passages: Sequence[tuple[str, str] | str],
    *,
    cache_mode: CacheMode = "use",
) -> Answer:
    """Answer one question over the given passages (``(title, text)`` pairs, or texts) with a
    recipe (a file or a loaded :class:`~chainrag.recipes.recipe.Recipe`), as ``chainrag ask``
    does; the managed local server is started and stopped for it."""
    from chainrag.core.types import Passage
    from chainrag.recipes.recipe import Recipe as LoadedRecipe
    from chainrag.run.question import ask as answer

    loaded = recipe if isinstance(recipe, LoadedRecipe) else load_recipe(recipe)
    given = [p if isinstance(p, tuple) else ("", p) for p in passages]
    if not given:
        raise ValueError("ask needs at least one passage to answer over")
    typed = [Passage(str(i), title, text) for i, (title, text) in enumerate(given)]
    prediction, texts = answer(loaded, question, typed, cache_mode=cache_mode)
    answers = {a.name: a.answer.text for a in prediction.answers}
    return Answer(answers, prediction, tuple(texts))
