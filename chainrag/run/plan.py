"""What ``chainrag run --dry-run`` prints: the plan of a grid, with no LLM call and no model.

    for line in plan_lines(grid):
        print(line)
    # musique / ansint (ChainRAG, local qwen2.5-coder-1.5b): 5 questions -> runs/musique/ansint
    #   resumes: 3 of 5 answered, 1 failed before (tried again), 2 to answer

For each recipe x dataset: the questions, the run folder, and what running would do there —
start it, resume it (how many are answered, how many failed and are tried again), find it
complete, or refuse it (a folder of another recipe or dataset, as ``chainrag run`` would); the
LLM and whether it is a paid API; the command line's changes to the recipe.
"""

from __future__ import annotations

from pathlib import Path

from chainrag.core.errors import ChainragError
from chainrag.data.datasets import dataset_path
from chainrag.recipes.recipe import LLMSpec, Recipe
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.jobs import Grid, Job, index_slug


def llm_words(spec: LLMSpec) -> str:
    """The LLM in words: ``local qwen2.5-coder-1.5b`` or ``openai/gpt-4o-mini (paid API)``."""
    if spec.kind == "local_gguf":
        return f"local {spec.model}" + (f" at {spec.api_base}" if spec.api_base else "")
    if spec.api_base:
        return f"{spec.model} at {spec.api_base}"
    return f"{spec.model} (paid API)"


def job_folder(job: Job, recipe: Recipe) -> Path:
    """Where ``chainrag run`` writes ``recipe`` over ``job.dataset`` (read from the corpus
    index's manifest, not opening the index, where there is one)."""
    from chainrag.index.corpus.store import read_manifest

    sources = read_manifest(job.index)["sources"] if job.index is not None else None
    return job.out / index_slug(job.dataset, sources) / recipe.name


def folder_state(folder: Path, job: Job, recipe: Recipe, wanted: set[str]) -> str:
    """What a run would do in ``folder``: start, resume, nothing, or refuse (and why)."""
    if not (folder / RUN_FILE).is_file():
        return f"new: {len(wanted)} to answer"
    run = RunDir(folder)
    try:
        dataset_file, _ = dataset_path(job.dataset)
        run.check(recipe, job.dataset, dataset_file)
        done = {r.id for r in run.records()[0]} & wanted
        failed = {e.id for e in run.errors()} & wanted - done
    except ChainragError as exc:
        return f"refused: {exc}"
    left = len(wanted) - len(done)
    if not left:
        return f"complete: {len(done)} of {len(wanted)} answered, nothing to do"
    again = f", {len(failed)} failed before (tried again)" if failed else ""
    return f"resumes: {len(done)} of {len(wanted)} answered{again}, {left} to answer"


def plan_lines(grid: Grid) -> list[str]:
    """The plan of ``grid``, two or three lines per recipe x dataset."""
    lines = []
    recipes = dict(grid.recipes)
    for job in grid.jobs:
        recipe = recipes[job.recipe]
        examples = grid.questions[job.dataset]
        folder = job_folder(job, recipe)
        method = type(recipe.method).__name__ if recipe.method is not None else "no method"
        lines.append(f"{job.dataset} / {recipe.name} ({method}, {llm_words(recipe.llm)}): "
                     f"{len(examples)} questions -> {folder}")  # fmt: skip
        lines.append("  " + folder_state(folder, job, recipe, {e.qid for e in examples}))
        if job.changes:
            lines.append("  recipe changed by: " + " ".join(job.changes))
    lines.append("dry run: nothing was run, no LLM was called")
    return lines
