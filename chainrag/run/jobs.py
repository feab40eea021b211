"""Run jobs: recipes over a dataset into their run folders, in this process or as Ray tasks.

    results = run_group(recipes, "musique", out=Path("runs"))          # one LLM server shared
    results = run_grid_ray([Job(Path("r.yaml"), "2wiki", Path("runs"))])  # a task per job

A job is one recipe over one dataset (optionally over a prebuilt corpus index) into
``OUT/<dataset slug>/<recipe name>/``; its run folder is resumable, so a grid whose tasks were
lost is finished by running it again. :func:`run_group` runs several recipes over one dataset
in this process, sharing one LLM (one managed server) between the recipes that name the same
``llm:``; :func:`run_grid_ray` sends each job to a Ray task (a local Ray, or the cluster at
``RAY_ADDRESS``), which runs it with :func:`run_group` on its worker.

Layer: run orchestration. May import recipes, data, the LLM layer, the index and corpus
packages, the session loop and run folders; never the CLI.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.context import ModelStore
from chainrag.core.types import QAExample
from chainrag.data.datasets import DatasetError, dataset_path, dataset_slug, load_dataset
from chainrag.index.build import IndexCache
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import LLMSpec, Recipe
from chainrag.run.files import locked
from chainrag.run.folder import RunDir
from chainrag.run.meta import IndexIdentity
from chainrag.run.question import check_runnable
from chainrag.run.session import SessionResult, Tally, run_recipe

Progress = Callable[[str, int, int, dict[str, str]], None]
"""``progress(label, done, total, postfix)`` after every question of the run ``label``
(``musique/ansint``): the CLI's :class:`~chainrag.cli.common.Progress` bars."""


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
class JobResult:
    """A job's run folder and how its session ended."""

    folder: Path
    session: SessionResult

    def line(self) -> str:
        """What ``chainrag run`` says of it: ``runs/musique/naive: 3 answered, 2 already done,
        1 failed in 40 s``."""
        result = self.session
        parts = [f"{result.answered} answered"]
        if result.skipped:
            parts.append(f"{result.skipped} already done")
        if result.failed:
            parts.append(f"{result.failed} failed")
        if result.torn_bytes:
            parts.append(f"torn last line repaired ({result.torn_bytes} bytes)")
        if result.stopped is not None:
            parts.append(f"stopped by {type(result.stopped).__name__}")
        return f"{self.folder}: {', '.join(parts)} in {result.seconds:.0f} s"


@attrs.frozen
class Grid:
    """Recipes x datasets as ``chainrag run`` was given them, loaded and checked: a job per
    pair (dataset-major), the recipes, and each dataset's questions."""

    jobs: tuple[Job, ...]
    recipes: tuple[tuple[Path, Recipe], ...]
    questions: Mapping[str, Sequence[QAExample]]

    def lines(self) -> list[str]:
        """A line per dataset: its questions, the recipes, where the runs go."""
        out = self.jobs[0].out if self.jobs else Path()
        return [f"{len(examples)} questions of {d}; {len(self.recipes)} recipe(s); runs in {out}/"
                for d, examples in self.questions.items()]  # fmt: skip


def plan_grid(
    recipes: Sequence[Path], datasets: Sequence[str], *, out: Path, limit: int | None = None,
    concurrency: int | None = None, cache_mode: str = "use", index: Path | None = None,
    say: Callable[[str], None] | None = None, overrides: Sequence[str] = (),
    llm: str | None = None,
) -> Grid:  # fmt: skip
    """Load and check every recipe (with ``--llm`` and ``--set`` applied) and dataset before
    anything runs (see :func:`load_recipes`, :func:`load_questions`); ``say`` is told the
    format detected in a dataset given as a file."""
    loaded = load_recipes(recipes, overrides, llm)
    questions = {d: load_questions(d, limit, index is not None, say) for d in datasets}
    jobs = [Job(path, d, out, limit, concurrency, cache_mode, index, tuple(overrides), llm)
            for d in datasets for path, _ in loaded]  # fmt: skip
    return Grid(tuple(jobs), tuple(loaded), questions)


def run_grid(
    grid: Grid,
    *,
    progress: Progress | None = None,
    on_result: Callable[[JobResult], None] | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[JobResult]:
    """Every dataset's recipes in this process, dataset by dataset (recipes with one ``llm:``
    share its server; see :func:`run_group`); stops after a run that was interrupted."""
    results: list[JobResult] = []
    for job in grid.jobs[:: len(grid.recipes)]:  # one job per dataset stands for its group
        results += run_group(job, grid.recipes, grid.questions[job.dataset],
                             progress=progress, on_result=on_result, say=say)  # fmt: skip
        if results and results[-1].session.interrupted:
            break
    return results


def run_slug(dataset: str, shared: Any = None) -> str:
    """The folder of a dataset's runs; over a corpus index ``DATASET@CORPUS`` (the corpus named
    by its sources, so that runs over a graph and a chunk index of one corpus sit together)."""
    return index_slug(dataset, shared.manifest["sources"] if shared is not None else None)


def index_slug(dataset: str, sources: Sequence[str] | None) -> str:
    """:func:`run_slug` from the corpus index's sources (None: no index), read from its
    manifest without opening the index."""
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


def open_shared(recipe: Recipe, folder: Path) -> Any:
    """The corpus index at ``folder`` as ``recipe`` searches it; its ``index:`` must be the one
    the index was built with."""
    from chainrag.index.corpus.build import same_index
    from chainrag.index.corpus.store import CorpusIndex, CorpusIndexError, read_manifest

    manifest = read_manifest(folder)
    if recipe.index is None or not same_index(manifest.get("index"), recipe.index):
        raise CorpusIndexError(
            f"recipe {recipe.name!r}: its index: section is not the one {folder} was built with "
            f"({manifest['recipe_digest']}); build an index with this recipe (chainrag index "
            "R ... --out-dir ...) or run a recipe with that index: section"
        )
    assert recipe.index.embedder is not None
    weights = recipe.retrieval.edge_weights if recipe.retrieval else None
    return CorpusIndex.open(folder, recipe.index.embedder, weights or None)


def index_identity(shared: Any) -> IndexIdentity:
    """What ``run.json`` records of the corpus index a run is answered over."""
    m = shared.manifest
    return IndexIdentity(str(shared.folder), m["recipe_digest"], tuple(m["sources"]),
                         m["corpus_sha256"], m["counts"])  # fmt: skip


def run_into(
    recipe: Recipe, path: Path, folder: Path, dataset: str, examples: Sequence[QAExample],
    llm: Any, *, width: int, slots: int | None, cache: IndexCache | None, shared: Any = None,
    progress: Progress | None = None, models: ModelStore | None = None,
    say: Callable[[str], None] = lambda _: None, changes: tuple[str, ...] = (),
) -> SessionResult:  # fmt: skip
    """Run one recipe into ``folder`` and record the session's end, interrupted or not
    (``slots``: LLM requests in flight, None where ``llm`` limits itself below its response
    cache, as :func:`open_job_llm`'s does; ``models``: a model store already holding what the
    questions load, else a new one;
    ``say``: where a warning goes, such as a resumed run's changed llama.cpp build)."""
    from chainrag.core.llama_build import llama_build
    from chainrag.llm import managed_prompt_cache

    dataset_file, _ = dataset_path(dataset)
    label = f"{folder.parent.name}/{recipe.name}"

    def report(done: int, total: int, tally: Tally) -> None:
        if progress:
            progress(label, done, total, tally.postfix())

    with locked(folder):
        run_dir = RunDir(folder)
        about = index_identity(shared) if shared is not None else None
        mode = managed_prompt_cache(recipe.llm)
        run_dir.start(
            recipe,
            path,
            dataset,
            dataset_file,
            index=about,
            prompt_cache=mode,
            llama_build=llama_build() if mode is not None else None,
            say=say,
            changes=changes,
        )
        result = run_recipe(recipe, examples, run_dir, llm, concurrency=width, llm_slots=slots,
                            models=models, cache=cache, index=shared,
                            progress=report)  # fmt: skip
        run_dir.finish_session(result.summary())
    return result


def by_llm(recipes: Sequence[tuple[Path, Recipe]]) -> dict[LLMSpec, list[tuple[Path, Recipe]]]:
    """The recipes grouped by their ``llm:``, in order: each group shares one LLM."""
    groups: dict[LLMSpec, list[tuple[Path, Recipe]]] = {}
    for path, recipe in recipes:
        groups.setdefault(recipe.llm, []).append((path, recipe))
    return groups


@contextlib.contextmanager
def open_job_llm(
    spec: LLMSpec, job: Job, say: Callable[[str], None] = lambda _: None
) -> Iterator[tuple[LLM, int, int]]:
    """The LLM of ``spec`` for ``job`` (through the response cache in ``job.cache_mode``), the
    questions in flight (``--concurrency``, else the recipe's) and the LLM requests in flight
    (1 for the managed local server, which answers one at a time). The LLM holds that limit
    itself, below the response cache: a cached answer never waits for a live request."""
    from chainrag.core.paths import llm_cache_path
    from chainrag.llm import managed_prompt_cache, open_llm

    if spec.kind == "local_gguf":
        say(f"starting the local {spec.model} server…")
    if managed_prompt_cache(spec) is not None:  # chainrag starts a server: are cores free?
        from chainrag.core.device import cores
        from chainrag.llm.server import crowding, running_servers

        if warning := crowding(running_servers(), cores()):
            say(warning)
    width, slots = in_flight(spec, job.concurrency)
    with open_llm(spec, cache_path=llm_cache_path(), cache_mode=job.cache_mode,  # type: ignore[arg-type]
                  slots=slots) as llm:  # fmt: skip
        yield llm, width, slots


def in_flight(spec: LLMSpec, concurrency: int | None) -> tuple[int, int]:
    """Questions in flight (``concurrency``, else the recipe's ``llm.concurrency``) and LLM
    requests in flight (as many, but 1 for a local model, whose server answers one at a time)."""
    width = concurrency or spec.concurrency
    return width, 1 if spec.kind == "local_gguf" else width


def run_group(
    job: Job,
    recipes: Sequence[tuple[Path, Recipe]],
    examples: Sequence[QAExample],
    *,
    progress: Progress | None = None,
    on_result: Callable[[JobResult], None] | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[JobResult]:
    """``recipes`` over ``job.dataset`` in this process; recipes with the same ``llm:`` share
    one LLM (one managed server). Stops after a run that was interrupted, and raises the error
    that stopped a run (:attr:`SessionResult.stopped`) once its end is recorded."""
    results, cache = [], IndexCache()
    for spec, members in by_llm(recipes).items():
        with open_job_llm(spec, job, say) as (llm, width, _):
            for path, recipe in members:
                shared = open_shared(recipe, job.index) if job.index else None
                folder = job.out / run_slug(job.dataset, shared) / recipe.name
                session = run_into(recipe, path, folder, job.dataset, examples, llm,
                                   width=width, slots=None, cache=cache,
                                   shared=shared, progress=progress, say=say,
                                   changes=job.changes)  # fmt: skip
                results.append(JobResult(folder, session))
                if on_result:
                    on_result(results[-1])
                if session.stopped is not None:  # recorded in run.json; the command ends
                    raise session.stopped
                if session.interrupted:
                    return results
    return results


def run_job(job: Job) -> JobResult:
    """One job from scratch (load its recipe and questions, open its LLM): a Ray task's body."""
    recipes = load_recipes([job.recipe], job.overrides, job.llm)
    examples = load_questions(job.dataset, job.limit, job.index is not None)
    return run_group(job, recipes, examples)[0]


def run_grid_ray(jobs: Sequence[Job], cpus_per_job: float = 1.0) -> list[JobResult]:
    """Each job as a Ray task (a local Ray, or the cluster at ``RAY_ADDRESS``), in job order.

    A job's task needs ``cpus_per_job`` CPUs (give a managed local LLM's job the cores its
    server uses). Workers import chainrag as the driver does (on a cluster, install it on every
    node). A task that fails raises here; every run folder keeps what its task finished, so
    running the grid again completes it.
    """
    import ray

    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False,
                 log_to_driver=False)  # fmt: skip
    task = ray.remote(num_cpus=cpus_per_job, max_retries=0)(run_job)
    refs = [task.remote(job) for job in jobs]
    return list(ray.get(refs))
