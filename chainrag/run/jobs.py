"""Run jobs: a run plan executed, recipes over a dataset into their run folders, in this
process or as Ray tasks.

    plan = plan_grid(recipes, ["musique"], out=Path("runs"))    # chainrag.run.plan
    results = run_grid(plan)                                    # one LLM server per llm:
    results = run_grid_ray(plan.jobs)                           # a Ray task per job

A job is one recipe over one dataset (optionally over a prebuilt corpus index) into
``OUT/<dataset slug>/<recipe name>/``; its run folder is resumable, so a grid whose tasks were
lost is finished by running it again. :func:`run_grid` runs a plan's runs in this process,
dataset by dataset (:func:`run_group`), sharing one LLM (one managed server) between the
recipes that name the same ``llm:``, and reads nothing the plan read; :func:`run_grid_ray`
sends each job to a Ray task (a local Ray, or the cluster at ``RAY_ADDRESS``), which plans it
again on its worker (:func:`run_job`).

Layer: run orchestration. May import recipes, data, the LLM layer, the index and corpus
packages, the session loop and run folders; never the CLI.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from chainrag.core.context import ModelStore
from chainrag.core.errors import ChainragError, LLMUnavailableError
from chainrag.core.llama_build import LlamaBuild
from chainrag.core.types import QAExample
from chainrag.data.datasets import dataset_path
from chainrag.index.build import IndexCache, spacy_stages
from chainrag.protocols.llm import LLM
from chainrag.recipes.recipe import LLMSpec, Recipe
from chainrag.run.files import LOCK, locked
from chainrag.run.folder import ERRORS, PREDICTIONS, RECIPE_FILE, RUN_FILE, RunDir
from chainrag.run.meta import IndexIdentity, RunIdentity
from chainrag.run.plan import Grid as Grid  # re-exported: the plan's old name
from chainrag.run.plan import Job as Job  # re-exported: where jobs were defined
from chainrag.run.plan import PlannedRun, RunPlan, manifest_identity, other_index, plan_grid
from chainrag.run.plan import index_slug as index_slug  # re-exported
from chainrag.run.plan import load_questions as load_questions  # re-exported
from chainrag.run.plan import load_recipes as load_recipes  # re-exported
from chainrag.run.session import (
    STATE_FILE,
    SessionResult,
    Tally,
    run_recipe,
    spacy_placement,
)

if TYPE_CHECKING:
    from chainrag.index.corpus.store import CorpusIndex

Progress = Callable[[str, int, int, dict[str, str]], None]
"""``progress(label, done, total, postfix)`` after every question of the run ``label``
(``musique/ansint``): the CLI's :class:`~chainrag.cli.common.Progress` bars."""


@attrs.frozen
class JobResult:
    """A job's run folder and how its session ended."""

    folder: Path
    session: SessionResult

    def line(self) -> str:
        """What ``chainrag run`` says of it: ``runs/musique/naive: 3 answered, 2 already done,
        1 failed in 40 s`` (``1 failed (1 on a bug in chainrag)`` where it was one)."""
        result = self.session
        parts = [f"{result.answered} answered"]
        if result.skipped:
            parts.append(f"{result.skipped} already done")
        if result.failed:
            bugs = f" ({len(result.bugs)} on a bug in chainrag)" if result.bugs else ""
            parts.append(f"{result.failed} failed{bugs}")
        if result.torn_bytes:
            parts.append(f"torn last line repaired ({result.torn_bytes} bytes)")
        if result.stopped is not None:
            parts.append(f"stopped by {type(result.stopped).__name__}")
        return f"{self.folder}: {', '.join(parts)} in {result.seconds:.0f} s"


def run_grid(
    plan: RunPlan,
    *,
    progress: Progress | None = None,
    on_result: Callable[[JobResult], None] | None = None,
    say: Callable[[str], None] = lambda _: None,
    checked: frozenset[LLMSpec] = frozenset(),
) -> list[JobResult]:
    """The plan's runs in this process, dataset by dataset (recipes with one ``llm:`` share its
    server; see :func:`run_group`), once :meth:`RunPlan.check` found none refused; stops after
    a run that was interrupted. ``checked``: the LLMs that passed
    :func:`~chainrag.run.preflight.check_plan` (the others are checked before their first
    live request)."""
    plan.check()
    results: list[JobResult] = []
    for group in plan.groups():
        results += run_group(group, progress=progress, on_result=on_result, say=say,
                             checked=checked)  # fmt: skip
        if results and results[-1].session.interrupted:
            break
    return results


def open_shared(recipe: Recipe, folder: Path) -> CorpusIndex:
    """The corpus index at ``folder`` as ``recipe`` searches it; its ``index:`` must be the one
    the index was built with."""
    from chainrag.index.corpus.store import CorpusIndex, CorpusIndexError, read_manifest

    if reason := other_index(recipe, folder, read_manifest(folder)):
        raise CorpusIndexError(reason)
    assert recipe.index is not None
    assert recipe.index.embedder is not None
    weights = recipe.retrieval.edge_weights if recipe.retrieval else None
    return CorpusIndex.open(folder, recipe.index.embedder, weights or None)


def index_identity(shared: CorpusIndex) -> IndexIdentity:
    """What ``run.json`` records of the corpus index a run is answered over."""
    return manifest_identity(shared.folder, shared.manifest)


def _silent(_: str) -> None:
    """Says nothing (where no one listens for a warning)."""


@attrs.frozen
class RunOptions:
    """How :func:`run_into` runs one recipe into its folder.

    Attributes:
        width: Questions in flight.
        slots: LLM requests in flight, held around the whole LLM; None where the LLM limits
            itself below its response cache, as :func:`open_job_llm`'s does.
        cache: The index cache (None: each question's index is built, not cached).
        shared: The corpus index every question is answered over, else None (each question's
            own index).
        progress: Told after every question (:data:`Progress`).
        models: A model store already holding what the questions load, else a new one.
        say: Where a warning goes, such as a resumed run's changed llama.cpp build.
        changes: The recipe's ``--set`` changes, which ``run.json`` records.
        identity: The run's as its plan computed it, else computed from the dataset's file.
        experiment: The experiment the run is a part of, which its ``run.json`` records.
    """

    width: int = 1
    slots: int | None = None
    cache: IndexCache | None = None
    shared: CorpusIndex | None = None
    progress: Progress | None = None
    models: ModelStore | None = None
    say: Callable[[str], None] = _silent
    changes: tuple[str, ...] = ()
    identity: RunIdentity | None = None
    experiment: str | None = None


def run_into(
    recipe: Recipe,
    path: Path | None,
    folder: Path,
    dataset: str,
    examples: Sequence[QAExample],
    llm: LLM,
    options: RunOptions = RunOptions(),
) -> SessionResult:
    """Run one recipe (read from ``path``; None: given as an object) over ``examples`` of
    ``dataset`` into ``folder`` with ``llm``, as ``options`` say, and record the session's end,
    interrupted or not."""
    identity = options.identity
    if identity is None:
        about = index_identity(options.shared) if options.shared is not None else None
        identity = RunIdentity.of(recipe, dataset, dataset_path(dataset)[0], about)
    label = f"{folder.parent.name}/{recipe.name}"
    progress = options.progress

    def report(done: int, total: int, tally: Tally) -> None:
        if progress:
            progress(label, done, total, tally.postfix())

    fresh = not (folder / RUN_FILE).exists()
    with locked(folder):
        run_dir = RunDir(folder)
        mode, build = server_session(recipe.llm)
        run_dir.start(recipe, path, dataset, identity.dataset_file, index=identity.index,
                      prompt_cache=mode, llama_build=build, say=options.say,
                      changes=options.changes, identity=identity,
                      experiment=options.experiment)  # fmt: skip
        result = run_recipe(recipe, examples, run_dir, llm, concurrency=options.width,
                            llm_slots=options.slots, models=options.models,
                            cache=options.cache, index=options.shared,
                            progress=report)  # fmt: skip
        if not (fresh and refused_first(result)):
            run_dir.finish_session(result.summary())
            return result
    discard(folder)
    return result


def refused_first(result: SessionResult) -> bool:
    """Whether the session was stopped by its LLM or encoder being refused (a check put off
    to the first live request, since the cache held answers of its endpoint, then failed)
    before any question was answered or failed: a new folder of such a run is not kept."""
    nothing = result.answered == result.failed == result.skipped == 0
    return nothing and isinstance(result.stopped, LLMUnavailableError)


def discard(folder: Path) -> None:
    """Remove what a run's first session wrote into ``folder`` (its description, its empty
    record files, its lock), the folder where that leaves it empty, and its dataset's folder
    where that leaves it empty too: a refused run leaves nothing behind."""
    for name in (RUN_FILE, RECIPE_FILE, PREDICTIONS, ERRORS, STATE_FILE, LOCK):
        (folder / name).unlink(missing_ok=True)
    for empty in (folder, folder.parent):
        with contextlib.suppress(OSError):  # not empty: something else lives there
            empty.rmdir()


def server_session(spec: LLMSpec) -> tuple[str | None, LlamaBuild | None]:
    """What a run folder's session records of ``spec``'s managed local server: its prompt-cache
    mode and the llama.cpp build it runs (both None for an LLM chainrag does not start)."""
    from chainrag.core.llama_build import llama_build
    from chainrag.llm import managed_prompt_cache

    mode = managed_prompt_cache(spec)
    return mode, llama_build() if mode is not None else None


def by_llm(runs: Sequence[PlannedRun]) -> list[list[PlannedRun]]:
    """The runs grouped by their recipe's ``llm:``, in order: each group shares one LLM."""
    groups: dict[LLMSpec, list[PlannedRun]] = {}
    for run in runs:
        groups.setdefault(run.recipe.llm, []).append(run)
    return list(groups.values())


@contextlib.contextmanager
def open_job_llm(
    spec: LLMSpec, job: Job, say: Callable[[str], None] = lambda _: None, checked: bool = False
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
                  slots=slots, checked=checked) as llm:  # fmt: skip
        yield llm, width, slots


def in_flight(spec: LLMSpec, concurrency: int | None) -> tuple[int, int]:
    """Questions in flight (``concurrency``, else the recipe's ``llm.concurrency``) and LLM
    requests in flight (as many, but 1 for a local model, whose server answers one at a time)."""
    width = concurrency or spec.concurrency
    return width, 1 if spec.kind == "local_gguf" else width


def start_fork_server(recipes: Iterable[Recipe], concurrency: int | None) -> None:
    """Start the spaCy workers' fork server now where a run of one of ``recipes`` at
    ``concurrency`` (None: its LLM's), each question building its own index, will have spaCy in
    worker processes (:func:`~chainrag.run.session.spacy_placement`), so that it imports spaCy
    and loads the recipe's pipelines while this process goes on (imports litellm, checks the
    endpoints, opens the LLM)."""
    from chainrag.components.index.spacy_workers import pipelines_of, placed
    from chainrag.components.index.spacy_workers import start_fork_server as start

    for recipe in recipes:
        width, _ = in_flight(recipe.llm, concurrency)
        if placed(spacy_stages(recipe.index), spacy_placement(recipe, width)):
            start(pipelines_of(spacy_stages(recipe.index)))
            return


def start_fork_server_early(
    paths: Sequence[Path],
    overrides: Sequence[str],
    embedder: str | None,
    reranker: str | None,
    llm: str | None,
    concurrency: int | None,
) -> None:
    """:func:`start_fork_server` before the run's plan is made, from its recipes read without
    asking litellm about ``--llm``'s, ``--embedder``'s and ``--reranker``'s model strings
    (:func:`~chainrag.recipes.overrides.llm_section`): litellm's import, the longest part of a
    run's start (3 s on 2 cores), then overlaps spaCy's in the fork server. The run's only
    start of it: the plan reads the same recipes asking litellm, so a plan that loads had them
    load here too; recipes that do not load are left to the plan, which says why."""
    from chainrag.recipes.overrides import encoder_changes, load_changed, parse_all

    try:
        changes = parse_all([*encoder_changes(embedder, reranker, ask_litellm=False), *overrides])
        recipes = [load_changed(path, changes, llm, ask_litellm=False) for path in paths]
    except ChainragError:
        return
    start_fork_server(recipes, concurrency)


def run_group(
    runs: Sequence[PlannedRun],
    *,
    progress: Progress | None = None,
    on_result: Callable[[JobResult], None] | None = None,
    say: Callable[[str], None] = lambda _: None,
    checked: frozenset[LLMSpec] = frozenset(),
) -> list[JobResult]:
    """Planned runs of one dataset in this process; recipes with the same ``llm:`` share one
    LLM (one managed server). Stops after a run that was interrupted, and raises the error
    that stopped a run (:attr:`SessionResult.stopped`) once its end is recorded."""
    results, cache = [], IndexCache()
    for members in by_llm(runs):
        spec = members[0].recipe.llm
        with open_job_llm(spec, members[0].job, say, spec in checked) as (llm, width, _):
            for run in members:
                options = RunOptions(width, cache=cache, progress=progress, say=say)
                session = run_planned(run, llm, options)
                results.append(JobResult(run.folder, session))
                if on_result:
                    on_result(results[-1])
                if session.stopped is not None:  # recorded in run.json; the command ends
                    raise session.stopped
                if session.interrupted:
                    return results
    return results


def run_planned(run: PlannedRun, llm: LLM, options: RunOptions = RunOptions()) -> SessionResult:
    """A planned run into its folder (see :func:`run_into`), over its corpus index if it has
    one, with the identity and changes its plan computed."""
    shared = open_shared(run.recipe, run.job.index) if run.job.index else None
    planned = attrs.evolve(options, shared=shared, changes=run.job.changes, identity=run.identity)
    return run_into(run.recipe, run.recipe_path, run.folder, run.data.name, run.data.examples,
                    llm, planned)  # fmt: skip


def run_job(job: Job) -> JobResult:
    """One job from scratch (plan it: load its recipe and questions, read its folder; open its
    LLM): a Ray task's body."""
    plan = plan_grid([job.recipe], [job.dataset], out=job.out, limit=job.limit,
                     concurrency=job.concurrency, cache_mode=job.cache_mode, index=job.index,
                     overrides=job.overrides, llm=job.llm)  # fmt: skip
    plan.check()
    return run_group([in_task(run) for run in plan.runs])[0]


def in_task(run: PlannedRun) -> PlannedRun:
    """``run`` with its spaCy stages in the task's own process: a Ray task holds the CPUs it
    asked for, so worker processes of its own would oversubscribe them (placement fields: the
    run's identity is the same)."""
    from chainrag.index.corpus.ray_engine import in_one_process

    if run.recipe.index is None:
        return run
    return attrs.evolve(
        run, recipe=attrs.evolve(run.recipe, index=in_one_process(run.recipe.index))
    )


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
