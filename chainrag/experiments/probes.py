"""What the probe experiments share: the folder they save into, and the loop of those that
ask a recipe's LLM component (the sufficiency judge, the knowledge filter) about questions.

A probe experiment saves into ``OUT/NAME-DATASET-<time>/``: ``table.md`` (what it prints),
``recipe.yaml`` (the resolved recipe) and ``probes.jsonl`` (one JSON line per probe).

Layer: experiments. May import everything below the CLI (recipes, datasets, the LLM layer, the
run folder's writers); never the CLI.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from chainrag.context import StageContext
from chainrag.core.types import QAExample
from chainrag.protocols.context import Context
from chainrag.recipes.recipe import Recipe, load_recipe

if TYPE_CHECKING:
    from chainrag.llm.cache import CacheMode

Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``."""

T = TypeVar("T")
C = TypeVar("C")
P = TypeVar("P")


@attrs.frozen
class SavedProbes:
    """A probe experiment's results as saved: the folder and the table it printed there."""

    folder: Path
    table: str


def counted(items: Sequence[T], progress: Progress | None, label: str = "probing") -> Iterator[T]:
    """``items`` one by one, reporting ``progress(label, done, total)`` before the first and
    after each."""
    for done, item in enumerate(items):
        if progress:
            progress(label, done, len(items))
        yield item
    if progress:
        progress(label, len(items), len(items))


def save_probes(stem: Path, table: str, recipe: Recipe, probes: Sequence[Any]) -> SavedProbes:
    """Save a probe experiment into ``STEM-<time>/``: its table, the resolved recipe and one
    JSON line per probe (each an attrs instance)."""
    from chainrag.run.files import json_line
    from chainrag.run.folder import write_recipe

    folder = stem.with_name(f"{stem.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "table.md").write_text(table + "\n", encoding="utf-8")
    write_recipe(folder / "recipe.yaml", recipe)
    with (folder / "probes.jsonl").open("wb") as fh:
        for p in probes:
            fh.write(json_line(attrs.asdict(p)))
    return SavedProbes(folder, table)


@attrs.frozen
class LLMProbe(Generic[C, P]):
    """An experiment that asks one LLM component of a recipe about each question.

    Attributes:
        name: The results folder's stem (``judge`` → ``judge-musique-<time>``).
        component: The probed component of a recipe, or an error saying the recipe has none.
        run: The probes of some questions, asked through the context's LLM.
        table: The table of the probes for a dataset and the component's name.
    """

    name: str
    component: Callable[[Recipe], C]
    run: Callable[[C, Iterable[QAExample], Context], list[P]]
    table: Callable[[Sequence[P], str, str], str]


def run_llm_probe(
    probe: LLMProbe[Any, Any],
    recipe: Path,
    dataset: str,
    limit: int,
    out: Path,
    cache_mode: CacheMode = "use",
    progress: Progress | None = None,
) -> SavedProbes:
    """Probe the recipe's component on the first ``limit`` questions of ``dataset``, through
    the recipe's LLM and the response cache (``cache_mode``), and save the results in ``out``.

    The recipe, its component and the questions are checked before the LLM is opened.
    """
    from chainrag.core.paths import llm_cache_path
    from chainrag.data.datasets import load_dataset
    from chainrag.llm import open_llm

    resolved = load_recipe(recipe)
    component = probe.component(resolved)
    examples = load_dataset(dataset, limit)
    with open_llm(resolved.llm, cache_path=llm_cache_path(), cache_mode=cache_mode) as llm:
        probes = probe.run(component, counted(examples, progress), StageContext(llm=llm))
    table = probe.table(probes, dataset, repr(component))
    return save_probes(out / f"{probe.name}-{dataset}", table, resolved, probes)
