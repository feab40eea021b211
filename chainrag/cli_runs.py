"""The ``chainrag run`` and ``chainrag report`` commands (attached to :mod:`chainrag.cli`)."""

from __future__ import annotations

import json
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from chainrag.cli_common import Progress
from chainrag.data import dataset_slug as dataset_slug  # the run folder of a dataset
from chainrag.errors import ChainragError, signal_name
from chainrag.recipe import load_recipe

DATASET_HELP = (
    "musique, hotpotqa, 2wiki (dev sets); pooled:NAME for a dev set over one pool of all its "
    "questions' passages (seed 002's shared store); or longbench:PATH for a LongBench jsonl file. "
    "Repeat for a grid of recipes x datasets."
)
CONCURRENCY_HELP = (
    "Questions in flight at once (default: the recipe's llm.concurrency); LLM requests stay "
    "at 1 for the local server."
)
ALL_QUESTIONS_HELP = (
    "Score each run on all of its questions, not only on those every run of the dataset answered."
)
ENGINE_HELP = (
    "local: in this process; ray: each recipe x dataset as a Ray task (a local Ray, or the "
    "cluster at RAY_ADDRESS), each writing its own resumable run folder."
)
RAY_CPUS_HELP = "CPUs a Ray task reserves (a managed local LLM's job: the cores its server uses)."
INDEX_HELP = (
    "Answer every question over this prebuilt corpus index (chainrag index ... --out DIR; the "
    "shared-corpus setting) instead of over its own passages; runs go to "
    "OUT/<dataset>@<corpus sources>/. Retrieval is scored against the gold passages' titles."
)
PLOTS_HELP = (
    "Folder for the PNG plots (default: plots/ beside --out, else inside the first run "
    "folder given)."
)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.secho(f"FAIL {message}", fg="red", err=True)
    return typer.Exit(code)


def check_cache_mode(cache_mode: str) -> None:
    """Exit 2 with a clear message unless ``cache_mode`` is one the LLM cache knows."""
    if cache_mode not in ("use", "bypass", "refresh"):
        raise _fail(f"--cache-mode must be use, bypass or refresh, not {cache_mode!r}", 2)


def run(
    recipes: Annotated[list[Path], typer.Argument(help="Method recipes to run, one run each.")],
    dataset: Annotated[list[str], typer.Option(help=DATASET_HELP)],
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the first N questions (default: all).")
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help=CONCURRENCY_HELP),
    ] = None,
    out: Annotated[Path, typer.Option(help="Runs go to OUT/<dataset>/<recipe name>/.")] = Path(
        "runs"
    ),
    cache_mode: Annotated[
        str, typer.Option(help="LLM response cache: use, bypass or refresh.")
    ] = "use",
    report: Annotated[bool, typer.Option(help="Print the report of these runs at the end.")] = True,
    index: Annotated[Path | None, typer.Option(help=INDEX_HELP)] = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    ray_cpus: Annotated[float, typer.Option(min=0.1, help=RAY_CPUS_HELP)] = 1.0,
) -> None:
    """Answer a dataset's questions with each recipe; one JSON line per question in a run
    directory. Run the same command again to continue a stopped run: finished questions are
    kept, a torn last line is repaired, only the rest is run."""
    from chainrag.run.jobs import Job, load_questions, load_recipes

    check_cache_mode(cache_mode)
    if engine not in ("local", "ray"):
        raise _fail(f"--engine must be local or ray, not {engine!r}", 2)
    try:
        loaded = load_recipes(recipes)
        questions = {d: load_questions(d, limit, index is not None) for d in dataset}
    except ChainragError as exc:
        raise _fail(str(exc)) from None
    jobs = [Job(path, d, out, limit, concurrency, cache_mode, index)
            for d in dataset for path, _ in loaded]  # fmt: skip
    for d, examples in questions.items():
        typer.echo(f"{len(examples)} questions of {d}; {len(loaded)} recipe(s); runs in {out}/")
    results = _on_ray(jobs, ray_cpus) if engine == "ray" else _locally(jobs, loaded, questions)
    if report:
        from chainrag.report import find_runs, markdown

        typer.echo("")
        typer.echo(markdown(find_runs([r.folder for r in results])))
    failed = sum(r.session.failed for r in results)
    if failed:
        raise _fail(f"{failed} question(s) failed (see errors.jsonl in the run directories); "
                    "run the same command again to retry them")  # fmt: skip


def _locally(jobs: Sequence[Any], loaded: Sequence[Any], questions: dict[str, Any]) -> list[Any]:
    """Every dataset's recipes in this process (recipes with one llm: share its server)."""
    from chainrag.run.jobs import run_group
    from chainrag.run.session import sigterm_as_interrupt

    results: list[Any] = []
    try:
        with sigterm_as_interrupt(), Progress("q") as progress:
            for job in jobs[:: len(loaded)]:  # one job per dataset stands for its group
                done = run_group(job, loaded, questions[job.dataset], progress=progress,
                                 on_result=_say_result, say=typer.echo)  # fmt: skip
                results += done
                if done and done[-1].session.interrupted:
                    raise _interrupted(done[-1].session.interrupted)
    except ChainragError as exc:
        raise _fail(
            f"{exc}\n(finished questions are kept; run the same command to resume)"
        ) from None
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM outside a recipe's questions
        raise _interrupted(signal_name(exc)) from None
    return results


def _on_ray(jobs: Sequence[Any], cpus: float) -> list[Any]:
    """Every job as a Ray task; each prints its result as the grid finishes."""
    from chainrag.run.jobs import run_grid_ray

    typer.echo(f"{len(jobs)} job(s) as Ray tasks ({cpus:g} CPU each)…")
    try:
        results = run_grid_ray(jobs, cpus)
    except ChainragError as exc:
        raise _fail(
            f"{exc}\n(finished questions are kept; run the same command to resume)"
        ) from None
    except KeyboardInterrupt as exc:
        raise _interrupted(signal_name(exc)) from None
    for result in results:
        _say_result(result)
    return results


def _interrupted(name: str) -> typer.Exit:
    typer.secho(f"\ninterrupted ({name}): finished questions are kept; run the same command "
                "to resume", fg="yellow", err=True)  # fmt: skip
    return typer.Exit(128 + signal.Signals[name].value)


def _say_result(job_result: Any) -> None:
    folder, result = job_result.folder, job_result.session
    parts = [f"{result.answered} answered"]
    if result.skipped:
        parts.append(f"{result.skipped} already done")
    if result.failed:
        parts.append(f"{result.failed} failed")
    if result.torn_bytes:
        parts.append(f"torn last line repaired ({result.torn_bytes} bytes)")
    typer.echo(f"{folder}: {', '.join(parts)} in {result.seconds:.0f} s")


def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
    out: Annotated[Path | None, typer.Option(help="Also write the markdown to this file.")] = None,
    plots: Annotated[
        Path | None,
        typer.Option(help=PLOTS_HELP),
    ] = None,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip the plots.")] = False,
    all_questions: Annotated[
        bool,
        typer.Option("--all-questions", help=ALL_QUESTIONS_HELP),
    ] = False,
) -> None:
    """Tables per dataset comparing runs (F1, EM, Recall@k, calls, tokens, seconds per
    question) beside the paper's Table 1, and PNG plots."""
    from chainrag.report import find_runs, markdown
    from chainrag.report import plots as draw

    try:
        found = find_runs(runs)
    except ChainragError as exc:
        raise _fail(str(exc)) from None
    text = markdown(found, common=not all_questions)
    typer.echo(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"written to {out}")
    if not no_plots:
        folder = plots or ((out.parent / "plots") if out is not None else runs[0] / "plots")
        for path in draw(found, folder, common=not all_questions):
            typer.echo(f"plot: {path}")


def recurring(
    recipe: Annotated[Path, typer.Option(help="A four_module recipe.")] = Path(
        "recipes/seeds/four_module.yaml"
    ),
    dataset: Annotated[str, typer.Option(help="musique, hotpotqa or 2wiki.")] = "musique",
    limit: Annotated[int, typer.Option(min=1, help="Questions asked (then asked again).")] = 10,
    out: Annotated[
        Path,
        typer.Option(
            help="Parent folder: the experiment goes into OUT/recurring-DATASET, and resumes "
            "there if it was stopped."
        ),
    ] = Path("runs"),
    cache_mode: Annotated[
        str, typer.Option(help="LLM response cache (refresh: every call is made and timed).")
    ] = "refresh",
) -> None:
    """Seed 004: ask questions, then again (same words and paraphrased) with and without the
    knowledge reservoir; time, external knowledge items and F1 per phase.

    Resumable: run the same command again after a crash or Ctrl-C and it continues where it
    stopped (the reservoir is rolled back to the last recorded question)."""
    from chainrag.data import load_dataset
    from chainrag.experiments import recurring as rec
    from chainrag.llm import open_llm
    from chainrag.paths import llm_cache_path

    check_cache_mode(cache_mode)
    folder = out / f"recurring-{dataset}"
    try:
        resolved = load_recipe(recipe)
        rec.with_reservoir(resolved, None)  # checks the method
        examples = load_dataset(dataset, limit)
        total = len(examples) * len(rec.PHASES)
        done = 0

        def started(recorded: int, total: int) -> None:
            nonlocal done
            done = recorded
            if recorded:
                typer.echo(f"{folder}: resuming, {recorded} of {total} question-phases "
                           "already done")  # fmt: skip
            progress("recurring", done, total)

        def moved(outcome: rec.Outcome) -> None:
            nonlocal done
            done += 1
            progress("recurring", done, total, {"phase": outcome.phase[:24]})

        def llm() -> Any:
            return open_llm(resolved.llm, cache_path=llm_cache_path(), cache_mode=cache_mode)  # type: ignore[arg-type]

        with Progress("q") as progress:
            outcomes = rec.in_folder(folder, resolved, dataset, examples, llm,
                                     on_start=started, on_outcome=moved)  # fmt: skip
    except ChainragError as exc:
        typer.secho(f"FAIL {exc}", fg="red", err=True)
        raise typer.Exit(1) from None
    typer.echo(rec.table(outcomes, dataset))
    typer.echo(f"saved to {folder}")


def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    recipe: Annotated[
        Path, typer.Option(help="A method recipe (e.g. recipes/chainrag/ansint.yaml).")
    ],
    context: Annotated[
        Path,
        typer.Option(
            help="Passages: JSON [{title, text}] or [title, [sentences]], or a text file."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the typed trace as JSON.")] = False,
    cache_mode: Annotated[
        str, typer.Option(help="LLM response cache: use, bypass or refresh.")
    ] = "use",
) -> None:
    """Answer one question over the given passages; print the answer and a readable trace."""
    from chainrag.context import ModelStore
    from chainrag.data import load_context_file
    from chainrag.index import IndexCache
    from chainrag.llm import open_llm
    from chainrag.paths import llm_cache_path
    from chainrag.run.question import answer_question, searchable_index
    from chainrag.structure import unstructure
    from chainrag.trace import render
    from chainrag.types import QAExample

    check_cache_mode(cache_mode)
    try:
        resolved = load_recipe(recipe)
        example = QAExample("ask", "ask", question, load_context_file(context))
        models = ModelStore()
        index = searchable_index(resolved, example, models, IndexCache())
        with open_llm(resolved.llm, cache_path=llm_cache_path(), cache_mode=cache_mode) as llm:  # type: ignore[arg-type]
            prediction = answer_question(resolved, example, llm, models=models, index=index)
    except ChainragError as exc:
        typer.secho(f"FAIL {exc}", fg="red", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(unstructure(prediction), indent=2, ensure_ascii=False))
        return
    typer.echo(render(prediction, index.texts))
