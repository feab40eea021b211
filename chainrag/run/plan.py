"""One plan per run: what ``chainrag run`` was given, read and checked once, before anything runs.

    plan = plan_grid([Path("recipes/chainrag/ansint.yaml")], ["musique"], out=Path("runs"))
    for line in plan_lines(plan):        # what --dry-run prints
        print(line)
    # musique / ansint (ChainRAG, local qwen2.5-coder-1.5b): 5 questions -> runs/musique/ansint
    #   resumes: 3 of 5 answered, 1 failed before (tried again), 2 to answer
    #   recipe digest: sha256:5f0c…
    plan.check()                         # a RunError naming every run that would be refused

:func:`plan_grid` reads every input once into a typed :class:`RunPlan`: the recipes (with the
command line's ``--llm`` and ``--set`` changes), each dataset's file, fingerprint, setting and
questions (:class:`PlannedData`), and for each recipe x dataset a :class:`PlannedRun` — its run
folder, its :class:`~chainrag.run.meta.RunIdentity` (recipe digest, dataset file fingerprint,
corpus index from its manifest) and what running would do there (:class:`FolderState`: start,
resume, nothing, or refuse: a folder of another recipe or dataset, an index built with another
``index:`` section). The dry run prints the plan; the run (:func:`chainrag.run.jobs.run_grid`)
and the estimate (:func:`chainrag.run.estimate.estimate_grid`) both execute it, side by side,
and neither reads a recipe, a dataset file or a manifest again. A run refused in the plan stops
the command before any run starts; a run folder is still checked once more when its run starts,
under the folder's lock (another command may have written it since).

A Ray task gets the plan's :class:`Job` and plans it again on its worker, which may be another
machine with other paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from chainrag.core.errors import ChainragError
from chainrag.core.types import QAExample
from chainrag.data.datasets import DatasetError, dataset_path, dataset_slug, load_dataset
from chainrag.recipes.recipe import LLMSpec, Recipe
from chainrag.run import meta
from chainrag.run.files import RunError
from chainrag.run.folder import RUN_FILE, RunDir
from chainrag.run.meta import IndexIdentity, RunIdentity
from chainrag.run.question import check_runnable


@attrs.frozen
class Job:
    """One recipe over one dataset; what ``chainrag run`` is given for it."""

    recipe: Path
    dataset: str
    out: Path
    limit: int | None = None
    concurrency: int | None = None
    cache_mode: str = "use"
    index: Path | None = None
    overrides: tuple[str, ...] = ()
    """``--set PATH=VALUE`` changes to the recipe, as given."""
    llm: str | None = None
    """``--llm NAME``: the LLM recipe whose ``llm:`` replaces the recipe's."""

    @property
    def changes(self) -> tuple[str, ...]:
        """The command-line changes to the recipe, as ``run.json`` records them."""
        from chainrag.recipes.overrides import describe

        return describe(self.overrides, self.llm)


@attrs.frozen
class PlannedData:
    """A dataset as the plan read it: its name, file, questions (``--limit`` applied) and the
    file's fingerprint and setting, computed once for every run over it."""

    name: str
    file: Path
    fingerprint: str
    setting: str | None
    examples: tuple[QAExample, ...]

    @classmethod
    def read(cls, name: str, examples: Sequence[QAExample]) -> PlannedData:
        """``name``'s file fingerprinted and its setting read, with its loaded ``examples``."""
        file, _ = dataset_path(name)
        fingerprint, setting = meta.dataset_identity(name, file)
        return cls(name, file, fingerprint, setting, tuple(examples))


@attrs.frozen
class FolderState:
    """What a run would do in its folder: start (``new``), ``resume`` (``done`` of ``wanted``
    answered, ``failed`` of the rest failed before), find it ``complete``, or be ``refused``
    (``reason``: the error the run would raise); ``note``: what a resume would say (the LLM
    reached otherwise than before), or ``""``."""

    kind: Literal["new", "resumes", "complete", "refused"]
    wanted: int
    done: int = 0
    failed: int = 0
    reason: str = ""
    note: str = ""

    def __str__(self) -> str:
        if self.kind == "new":
            return f"new: {self.wanted} to answer"
        if self.kind == "refused":
            return f"refused: {self.reason}"
        if self.kind == "complete":
            return f"complete: {self.done} of {self.wanted} answered, nothing to do"
        again = f", {self.failed} failed before (tried again)" if self.failed else ""
        left = self.wanted - self.done
        return f"resumes: {self.done} of {self.wanted} answered{again}, {left} to answer"


@attrs.frozen
class PlannedRun:
    """One recipe over one dataset as it will run: the job, the loaded recipe and its file,
    the dataset, the run folder, the run's identity and what running does in the folder."""

    job: Job
    recipe_path: Path
    recipe: Recipe
    data: PlannedData
    folder: Path
    identity: RunIdentity
    state: FolderState

    @property
    def label(self) -> str:
        """``<dataset folder>/<recipe name>``, as the run's progress bar names it."""
        return f"{self.folder.parent.name}/{self.recipe.name}"


@attrs.frozen
class RunPlan:
    """Recipes x datasets as ``chainrag run`` was given them, loaded and checked: a planned run
    per pair (dataset-major), the recipes, and each dataset as read."""

    runs: tuple[PlannedRun, ...]
    recipes: tuple[tuple[Path, Recipe], ...]
    datasets: Mapping[str, PlannedData]

    @property
    def jobs(self) -> tuple[Job, ...]:
        """Each run's job (what a Ray task is given)."""
        return tuple(run.job for run in self.runs)

    @property
    def questions(self) -> Mapping[str, Sequence[QAExample]]:
        """Each dataset's questions."""
        return {name: data.examples for name, data in self.datasets.items()}

    def groups(self) -> list[list[PlannedRun]]:
        """The runs dataset by dataset, each group in recipe order."""
        width = len(self.recipes)
        return [list(self.runs[i : i + width]) for i in range(0, len(self.runs), width)]

    def lines(self) -> list[str]:
        """A line per dataset: its questions, the recipes, where the runs go."""
        out = self.runs[0].job.out if self.runs else Path()
        return [f"{len(d.examples)} questions of {name}; {len(self.recipes)} recipe(s); runs in "
                f"{out}/" for name, d in self.datasets.items()]  # fmt: skip

    def check(self) -> None:
        """Raise a RunError naming every refused run (a folder of another run, an index built
        otherwise), before any run starts."""
        refused = [run for run in self.runs if run.state.kind == "refused"]
        if len(refused) == 1:
            raise RunError(refused[0].state.reason)
        if refused:
            reasons = "\n".join(f"  {run.label}: {run.state.reason}" for run in refused)
            raise RunError(f"{len(refused)} runs would be refused, so none was started:\n{reasons}")


Grid = RunPlan
"""The name :func:`plan_grid`'s result had before it carried the planned runs."""


def plan_grid(
    recipes: Sequence[Path], datasets: Sequence[str], *, out: Path, limit: int | None = None,
    concurrency: int | None = None, cache_mode: str = "use", index: Path | None = None,
    say: Callable[[str], None] | None = None, overrides: Sequence[str] = (),
    llm: str | None = None,
) -> RunPlan:  # fmt: skip
    """Load and check every recipe (with ``--llm`` and ``--set`` applied) and dataset, and plan
    each recipe x dataset in its folder (see :func:`load_recipes`, :func:`load_questions`,
    :func:`plan_run`), before anything runs; ``say`` is told the format detected in a dataset
    given as a file. A refused run is in the plan (:meth:`RunPlan.check` raises it)."""
    loaded = load_recipes(recipes, overrides, llm)
    read = {d: PlannedData.read(d, load_questions(d, limit, index is not None, say))
            for d in datasets}  # fmt: skip
    manifest = _manifest(index) if index is not None else None
    runs = [plan_run(Job(path, d, out, limit, concurrency, cache_mode, index, tuple(overrides),
                         llm), recipe, read[d], manifest)
            for d in datasets for path, recipe in loaded]  # fmt: skip
    return RunPlan(tuple(runs), tuple(loaded), read)


def plan_run(
    job: Job, recipe: Recipe, data: PlannedData, manifest: Mapping[str, Any] | None = None
) -> PlannedRun:
    """``recipe`` over ``data`` as ``job`` asks (over the corpus index whose ``manifest`` is
    given, where ``job.index`` is set): its folder, identity and what it would do there."""
    about, sources, reason = None, None, ""
    if job.index is not None:
        manifest = manifest if manifest is not None else _manifest(job.index)
        about = manifest_identity(job.index, manifest)
        sources = manifest["sources"]
        reason = other_index(recipe, job.index, manifest)
    folder = job.out / index_slug(job.dataset, sources) / recipe.name
    identity = RunIdentity(RunIdentity.digest(recipe), data.name, data.file, data.fingerprint,
                           data.setting, about)  # fmt: skip
    wanted = {e.qid for e in data.examples}
    if reason:
        state = FolderState("refused", len(wanted), reason=reason)
    else:
        state = folder_state(folder, recipe, identity, wanted)
    return PlannedRun(job, job.recipe, recipe, data, folder, identity, state)


def folder_state(
    folder: Path, recipe: Recipe, identity: RunIdentity, wanted: set[str]
) -> FolderState:
    """What a run of ``recipe`` (with ``identity``) would do in ``folder``: start, resume,
    nothing, or refuse (and why). Reads, never writes."""
    if not (folder / RUN_FILE).is_file():
        return FolderState("new", len(wanted))
    run = RunDir(folder)
    try:
        run.check(recipe, identity.dataset, identity.dataset_file, identity.index,
                  identity=identity)  # fmt: skip
        done = {r.id for r in run.records()[0]} & wanted
        failed = {e.id for e in run.errors()} & wanted - done
        note = run.access_note(recipe)
    except ChainragError as exc:
        return FolderState("refused", len(wanted), reason=str(exc))
    kind: Literal["complete", "resumes"] = "complete" if done == wanted else "resumes"
    return FolderState(kind, len(wanted), len(done), len(failed), note=note)


def _manifest(folder: Path) -> dict[str, Any]:
    from chainrag.index.corpus.store import read_manifest

    return read_manifest(folder)


def manifest_identity(folder: Path, manifest: Mapping[str, Any]) -> IndexIdentity:
    """What ``run.json`` records of the corpus index at ``folder`` (from its manifest)."""
    return IndexIdentity(str(folder), manifest["recipe_digest"], tuple(manifest["sources"]),
                         manifest["corpus_sha256"], manifest["counts"])  # fmt: skip


def other_index(recipe: Recipe, folder: Path, manifest: Mapping[str, Any]) -> str:
    """Why ``recipe`` cannot search the corpus index at ``folder`` (its ``index:`` section is not
    the one the index was built with), or ``""``."""
    from chainrag.index.corpus.build import same_index

    if recipe.index is not None and same_index(manifest.get("index"), recipe.index):
        return ""
    return (
        f"recipe {recipe.name!r}: its index: section is not the one {folder} was built with "
        f"({index_section_differences(manifest.get('index'), recipe)}); build an index with "
        "this recipe (chainrag index R ... --out-dir ...) or run a recipe with that index: section"
    )


def index_section_differences(stored: Any, recipe: Recipe) -> str:
    """Where ``recipe``'s ``index:`` section differs from the one a corpus index's manifest
    stored, field by field (``index.embedder.dim: 64 then, 128 now``; "then" is the index's),
    as far as what they compute goes; "no index: section" where the recipe has none."""
    from chainrag.recipes.recipe import structure_stored
    from chainrag.recipes.structure import identity
    from chainrag.run.provenance import differences

    if recipe.index is None:
        return "the recipe has no index: section"
    found = structure_stored({"name": "index", "index": stored}, "the index's manifest")
    before = identity(found.index) if found is not None else stored
    return "; ".join(differences(before, identity(recipe.index), "index")) or "unreadable"


def index_slug(dataset: str, sources: Sequence[str] | None) -> str:
    """The folder of a dataset's runs; over a corpus index ``DATASET@CORPUS`` (the corpus named
    by its ``sources``, read from its manifest, so that runs over a graph and a chunk index of
    one corpus sit together)."""
    if sources is None:
        return dataset_slug(dataset)
    from chainrag.index.corpus.store import corpus_label

    return f"{dataset_slug(dataset)}@{corpus_label(sources)}"


def load_recipes(
    paths: Sequence[Path], overrides: Sequence[str] = (), llm: str | None = None
) -> list[tuple[Path, Recipe]]:
    """The recipes (``--llm`` and each ``--set`` applied to each), each able to answer
    questions, with names unique among them."""
    from chainrag.recipes.overrides import load_changed, parse_all

    changes = parse_all(overrides)
    loaded = [(path, load_changed(path, changes, llm)) for path in paths]
    for _, recipe in loaded:
        check_runnable(recipe)
    names = [r.name for _, r in loaded]
    if len(set(names)) != len(names):
        raise DatasetError(f"two recipes share a name ({', '.join(names)}); each run needs its own")
    return loaded


def load_questions(
    dataset: str, limit: int | None, shared: bool, say: Callable[[str], None] | None = None
) -> list[QAExample]:
    """The dataset's questions, checked for what a run needs (ids unique; passages of their
    own unless a corpus index is given)."""
    examples = load_dataset(dataset, limit, say=say)
    if examples and not shared and not any(e.passages for e in examples):
        raise DatasetError(
            f"{dataset}: its questions carry no passages of their own (a shared-corpus set); "
            "run it over a corpus index: --index DIR, built by chainrag index R "
            "--corpus FILE --out-dir DIR"
        )
    seen: set[str] = set()
    for example in examples:
        if example.qid in seen:
            raise DatasetError(f"{dataset}: question id {example.qid!r} occurs twice; "
                               "runs key their lines by question id")  # fmt: skip
        seen.add(example.qid)
    return examples


def llm_words(spec: LLMSpec) -> str:
    """The LLM in words: ``local qwen2.5-coder-1.5b`` or ``openai/gpt-4o-mini (paid API)``."""
    if spec.kind == "local_gguf":
        return f"local {spec.model}" + (f" at {spec.api_base}" if spec.api_base else "")
    if spec.api_base:
        return f"{spec.model} at {spec.api_base}"
    return f"{spec.model} (paid API)"


def plan_lines(plan: RunPlan) -> list[str]:
    """The plan as ``--dry-run`` prints it, three lines or more per recipe x dataset: what it
    would do in its folder, and its recipe's digest (what the folder resumes by)."""
    lines = []
    for run in plan.runs:
        recipe = run.recipe
        method = type(recipe.method).__name__ if recipe.method is not None else "no method"
        lines.append(f"{run.data.name} / {recipe.name} ({method}, {llm_words(recipe.llm)}): "
                     f"{len(run.data.examples)} questions -> {run.folder}")  # fmt: skip
        lines.append(f"  {run.state}")
        lines.append(f"  recipe digest: {run.identity.recipe_digest}")
        if run.state.note:
            lines.append(f"  {run.state.note}")
        if run.job.changes:
            lines.append("  recipe changed by: " + " ".join(run.job.changes))
    lines.append("dry run: nothing was run, no LLM was called")
    return lines
