"""The commands that answer questions or read what was answered: ``chainrag run``, ``report``,
``ask`` and ``experiment recurring`` (attached to :mod:`chainrag.cli.main`). Each parses its
options, calls the run package (:mod:`chainrag.run`, :mod:`chainrag.report`,
:mod:`chainrag.experiments.recurring`) and prints what it returns."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from chainrag.cli.common import (
    BUG_HINT,
    DETECT_HELP,
    ApiBaseOption,
    EmbedderOption,
    LLMOption,
    Progress,
    RerankerOption,
    SetOption,
    changed_recipe,
    deprecated,
    fail,
    renamed,
    reports_errors,
    with_api_base,
    with_encoders,
)
from chainrag.core.errors import signal_name
from chainrag.core.heap import long_lived
from chainrag.data.datasets import dataset_slug as dataset_slug  # the run folder of a dataset
from chainrag.recipes.recipe import load_recipe

if TYPE_CHECKING:
    from chainrag.llm.cache import CacheMode
    from chainrag.recipes.recipe import LLMSpec
    from chainrag.run.jobs import JobResult
    from chainrag.run.plan import RunPlan

DATASET_HELP = (
    "musique, hotpotqa, 2wiki (dev sets); pooled:NAME for a dev set over one pool of all its "
    "questions' passages (Patwa et al.'s shared store); long:NAME for a dev set padded to "
    "LongBench's context length with other questions' paragraphs (long:NAME:PATH: your own "
    "question file padded so, from its own questions; long:PATH for MuSiQue's format); "
    "longbench:PATH for a "
    "LongBench jsonl file; or any file's PATH (with a / or ending in .json or .jsonl: "
    "MuSiQue, HotpotQA, 2Wiki, LongBench, HippoRAG or FlashRAG records, JSON array or JSON "
    "Lines, the format detected and said on stderr; runs go to OUT_DIR/<file stem>/). "
    "Any of them as NAME[START:STOP] for a slice of its questions, counted from 0 "
    "('long:2wiki[30:60]': questions 31-60, runs in OUT_DIR/long-2wiki-30-60/). "
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
    "Answer every question over this prebuilt corpus index (chainrag index R ... --out-dir "
    "DIR; the shared-corpus setting) instead of over its own passages; runs go to "
    "OUT_DIR/<dataset>@<corpus sources>/. Retrieval is scored against the gold passages' titles."
)
ESTIMATE_HELP = (
    "Do not run: print each run's expected LLM calls, tokens a question, dollars (litellm's "
    "price map) and wall time at its concurrency, scaled up from the questions its folder "
    "already answered or from a sample answered into an estimate folder of its own (see "
    "--sample), in this process whatever --engine. A paid API is called only with --yes: "
    "without it, its tokens come from stored runs of the same recipe on the same dataset "
    "(in --out-dir, then ./docs/runs, then the package's docs/runs), else from a sample the "
    "local model answers, counted with the "
    "model's tokenizer where litellm has it."
)
SAMPLE_HELP = (
    "With --estimate: the questions a sample answers (default 5), drawn with a fixed seed; "
    "a run folder answering as many already is read instead."
)
PLOTS_HELP = (
    "Folder for the PNG plots (default: plots/ beside --out, else inside the first run "
    "folder given)."
)
BASELINE_HELP = (
    "A recipe name as the report shows runs (e.g. naive): each table holding it gets every "
    "other answer's paired F1 difference from it, with its 95% interval and sign test. Repeat "
    "(--baseline naive --baseline vanilla): each dataset takes the first it has."
)


RUN_HINT = "finished questions are kept; run the same command to resume"
RECURRING_OUT_HELP = (
    "Parent folder: the experiment goes into OUT_DIR/recurring-DATASET, and resumes there if it "
    "was stopped."
)
CONTEXT_HELP = r"Passages: JSON [{title, text}] or [title, \[sentences]], or a text file."
r"""(``\[``: the help is rich markup, where ``[sentences]`` would be a style tag.)"""

Recipes = Annotated[list[Path], typer.Argument(help="Method recipes to run, one run each.")]
Datasets = Annotated[list[str], typer.Option(help=DATASET_HELP)]
Limit = Annotated[
    int | None, typer.Option(min=1, help="Only the first N questions (default: all).")
]
Concurrency = Annotated[int | None, typer.Option(min=1, help=CONCURRENCY_HELP)]
RunsOut = Annotated[
    Path,
    typer.Option("--out-dir", help="Parent folder: runs go to OUT_DIR/<dataset>/<recipe name>/."),
]
CacheModeOption = Annotated[str, typer.Option(help="LLM response cache: use, bypass or refresh.")]
ReportOption = Annotated[bool, typer.Option(help="Print the report of these runs at the end.")]
IndexOption = Annotated[Path | None, typer.Option(help=INDEX_HELP)]
EngineOption = Annotated[str, typer.Option(help=ENGINE_HELP)]
RayCpus = Annotated[float, typer.Option(min=0.1, help=RAY_CPUS_HELP)]
EstimateOption = Annotated[bool, typer.Option("--estimate", help=ESTIMATE_HELP)]
SampleOption = Annotated[int | None, typer.Option(min=1, help=SAMPLE_HELP)]
YesOption = Annotated[
    bool,
    typer.Option("--yes", help="With --estimate: make the sample's calls to a paid API "
                 "(without it, none is made: see --estimate)."),
]  # fmt: skip
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the plan — questions, run folders, what each run "
                 "would start, resume or refuse, the LLM — and stop: no LLM call, no model "
                 "(exit 1 where a run would be refused, as the run would)."),
]  # fmt: skip
OldOutDir = Annotated[
    Path | None, typer.Option("--out", hidden=True, help="Old spelling of --out-dir.")
]


def said(line: str) -> None:
    """A note on how an input was read (a dataset file's detected format), on stderr."""
    typer.echo(line, err=True)


def check_cache_mode(cache_mode: str) -> None:
    """Exit 2 with a clear message unless ``cache_mode`` is one the LLM cache knows."""
    if cache_mode not in ("use", "bypass", "refresh"):
        raise fail(f"--cache-mode must be use, bypass or refresh, not {cache_mode!r}", 2)


def check_run_options(
    cache_mode: str, engine: str, estimate: bool, sample: int | None, yes: bool
) -> None:
    """Refuse (exit code 2) a cache mode or engine that is none, and --sample or --yes
    without --estimate."""
    check_cache_mode(cache_mode)
    if engine not in ("local", "ray"):
        raise fail(f"--engine must be local or ray, not {engine!r}", 2)
    if sample is not None and not estimate:
        raise fail("--sample applies to --estimate only", 2)
    if yes and not estimate:
        raise fail("--yes applies to --estimate only (it allows the sample's paid calls)", 2)


@reports_errors()
def run(
    recipes: Recipes, dataset: Datasets, limit: Limit = None, concurrency: Concurrency = None,
    out_dir: RunsOut = Path("runs"), cache_mode: CacheModeOption = "use",
    report: ReportOption = True, index: IndexOption = None, engine: EngineOption = "local",
    ray_cpus: RayCpus = 1.0, estimate: EstimateOption = False, sample: SampleOption = None,
    yes: YesOption = False, dry_run: DryRunOption = False, set_: SetOption = None,
    llm: LLMOption = None, api_base: ApiBaseOption = None, out: OldOutDir = None,
    embedder: EmbedderOption = None, reranker: RerankerOption = None,
) -> None:  # fmt: skip
    """Answer a dataset's questions with each recipe; one JSON line per question in a run
    directory. Run the same command again to continue a stopped run: finished questions are
    kept, a torn last line is repaired, only the rest is run. With --dry-run, print the plan;
    with --estimate, what the runs would take."""
    from chainrag.run.jobs import start_fork_server_early
    from chainrag.run.plan import plan_grid

    out_dir = renamed("--out", "--out-dir", out, out_dir)
    check_run_options(cache_mode, engine, estimate, sample, yes)
    if engine != "ray" and index is None and not (dry_run or estimate):  # before litellm's import
        start_fork_server_early(recipes, set_ or [], embedder, reranker, llm, concurrency)
    plan = plan_grid(recipes, dataset, out=out_dir, limit=limit, concurrency=concurrency,
                     cache_mode=cache_mode, index=index, say=said,
                     overrides=with_api_base(with_encoders(set_, embedder, reranker), api_base),
                     llm=llm)  # fmt: skip
    from chainrag.run.preflight import check_plan, plan_warnings

    if dry_run:
        print_dry_run(plan)
        return
    for line in plan.lines():
        typer.echo(line)
    plan.check()  # a refused run stops the command before any run or sample starts
    if estimate:
        for line in plan_warnings(plan):
            typer.secho(line, fg="yellow", err=True)
        print_estimate(plan, sample, yes)
        return
    checked = check_plan(plan)  # a missing key or a dead endpoint stops it before a question
    long_lived()  # start-up's objects (imports, the plan) kept out of the run's collections
    results = run_grid(plan, engine, ray_cpus, checked)
    if report:
        print_report(results)
    if bugs := bug_report(results):
        typer.secho(bugs, fg="red", err=True)
    if failed := sum(r.session.failed for r in results):
        raise fail(f"{failed} question(s) failed (see errors.jsonl in the run directories); "
                   "run the same command again to retry them")  # fmt: skip


def print_report(results: list[JobResult]) -> None:
    """The report of the runs just made, after a blank line."""
    from chainrag.report import find_runs, markdown

    typer.echo("")
    typer.echo(markdown(find_runs([r.folder for r in results])))


def print_dry_run(plan: RunPlan) -> None:
    """``--dry-run``: the plan and its warnings, then its check (a plan that would refuse a
    run is no dry run of a command that works)."""
    from chainrag.run.plan import plan_lines
    from chainrag.run.preflight import plan_warnings

    for line in plan_lines(plan):
        typer.echo(line)
    for line in plan_warnings(plan):
        typer.secho(line, fg="yellow", err=True)
    plan.check()


def bug_report(results: list[JobResult]) -> str:
    """The questions that failed on a bug in chainrag (``"bug": true`` in ``errors.jsonl``),
    named as such with the first one's error and where its traceback is; "" for none."""
    bugs = [(r.folder, bug) for r in results for bug in r.session.bugs]
    if not bugs:
        return ""
    folder, first = bugs[0]
    message = first.message if len(first.message) <= 200 else first.message[:200] + "…"
    return (f"BUG {len(bugs)} question(s) failed on a bug in chainrag, not a problem with your "
            f"input or the LLM (question {first.id}: {first.error}: {message}); {BUG_HINT} "
            f"{folder / 'errors.jsonl'}")  # fmt: skip


@reports_errors(RUN_HINT)
def run_grid(
    plan: RunPlan, engine: str, cpus: float, checked: frozenset[LLMSpec] = frozenset()
) -> list[JobResult]:
    """The plan in this process (a bar per run) or as Ray tasks, a line per finished run; an
    interrupted run ends the command with 128 + the signal's number."""
    from chainrag.run import jobs
    from chainrag.run.session import sigterm_as_interrupt

    try:
        if engine == "ray":
            typer.echo(f"{len(plan.jobs)} job(s) as Ray tasks ({cpus:g} CPU each)…")
            results = jobs.run_grid_ray(plan.jobs, cpus)
            for result in results:
                typer.echo(result.line())
        else:
            with sigterm_as_interrupt(), Progress("q") as bars:

                def finished(result: JobResult) -> None:
                    bars.close()  # the run's bar, before the line that ends it
                    typer.echo(result.line())

                results = jobs.run_grid(plan, progress=bars, on_result=finished, say=typer.echo,
                                        checked=checked)  # fmt: skip
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM outside a recipe's questions
        raise interrupted(signal_name(exc)) from None
    if results and results[-1].session.interrupted:
        raise interrupted(results[-1].session.interrupted)
    return results


@reports_errors(RUN_HINT)
def print_estimate(plan: RunPlan, sample: int | None, yes: bool = False) -> None:
    """Each run's estimate (answering its sample, a bar per run, if it needs one) as a table.
    Unless ``yes``, a paid API is never called: its runs are estimated from stored runs of the
    same recipe, else from a sample the local model answers (with local encoders in place of
    paid remote ones), and what ``--yes`` would pay for is said below the table."""
    from chainrag.run.estimate import SAMPLE, estimate_grid, paid_samples, table
    from chainrag.run.session import sigterm_as_interrupt

    paid = [] if yes else paid_samples(plan, sample or SAMPLE)
    try:
        with sigterm_as_interrupt(), Progress("q") as bars:
            estimates = estimate_grid(plan, sample or SAMPLE, pay=not paid, progress=bars,
                                      say=typer.echo, pay_encoders=yes)  # fmt: skip
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM while a sample is answered
        raise interrupted(signal_name(exc)) from None
    typer.echo(table(estimates))
    if paid:
        typer.echo("")
        typer.echo("No paid call was made. With --yes, a paid sample refines these figures:")
        for item in paid:
            typer.echo(f"- {item.line()}")
        typer.echo(
            f"{sum(p.questions for p in paid)} sample question(s) in all, each making one LLM "
            "call or more (NaiveRAG 1, ChainRAG about 8 as measured on the dev sets); "
            "--sample N sets how many."
        )


def interrupted(name: str) -> typer.Exit:
    """Say that the run was interrupted by signal ``name``; exit 128 + its number."""
    typer.secho(f"\ninterrupted ({name}): {RUN_HINT}", fg="yellow", err=True)
    return typer.Exit(128 + signal.Signals[name].value)


@reports_errors()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
    out: Annotated[Path | None, typer.Option(help="Also write the markdown to this file.")] = None,
    plots_dir: Annotated[Path | None, typer.Option("--plots-dir", help=PLOTS_HELP)] = None,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip the plots.")] = False,
    plots: Annotated[
        Path | None, typer.Option("--plots", hidden=True, help="Old spelling of --plots-dir.")
    ] = None,
    all_questions: Annotated[
        bool, typer.Option("--all-questions", help=ALL_QUESTIONS_HELP)
    ] = False,
    baseline: Annotated[
        list[str] | None, typer.Option("--baseline", metavar="NAME", help=BASELINE_HELP)
    ] = None,
    detect: Annotated[float | None, typer.Option("--detect", metavar="D", help=DETECT_HELP)] = None,
) -> None:
    """Tables per dataset comparing runs (F1 and EM with 95% bootstrap intervals, Recall@k,
    calls, tokens, seconds per question) beside the paper's Table 1, paired differences from
    a baseline, and PNG plots with the intervals."""
    from chainrag.report import find_runs, markdown
    from chainrag.report import plots as draw

    found = find_runs(runs)
    text = markdown(found, common=not all_questions, baselines=baseline or (), detect=detect)
    typer.echo(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"written to {out}")
    if not no_plots:
        plots_dir = renamed("--plots", "--plots-dir", plots, plots_dir)
        folder = plots_dir or ((out.parent / "plots") if out is not None else runs[0] / "plots")
        for path in draw(found, folder, common=not all_questions):
            typer.echo(f"plot: {path}")


FourModuleRecipe = Annotated[
    Path, typer.Argument(metavar="RECIPE", help="A four_module recipe.", show_default=True)
]
OldRecipe = Annotated[
    Path | None, typer.Option("--recipe", hidden=True, help="Old spelling of the RECIPE argument.")
]
RecurringDataset = Annotated[str, typer.Option(help="musique, hotpotqa or 2wiki.")]
Asked = Annotated[int, typer.Option(min=1, help="Questions asked (then asked again).")]
RecurringOut = Annotated[Path, typer.Option("--out-dir", help=RECURRING_OUT_HELP)]
TimedCacheMode = Annotated[
    str, typer.Option(help="LLM response cache (refresh: every call is made and timed).")
]


@reports_errors()
def recurring(
    recipe: FourModuleRecipe = Path("recipes/seeds/four_module.yaml"),
    dataset: RecurringDataset = "musique", limit: Asked = 10,
    out_dir: RecurringOut = Path("runs"), cache_mode: TimedCacheMode = "refresh",
    recipe_option: OldRecipe = None, out: OldOutDir = None,
) -> None:  # fmt: skip
    """Shi et al.: ask questions, then again (same words and paraphrased) with and without the
    knowledge reservoir; time, external knowledge items and F1 per phase.

    Resumable: run the same command again after a crash or Ctrl-C and it continues where it
    stopped (the reservoir is rolled back to the last recorded question)."""
    from chainrag.experiments import recurring as rec
    from chainrag.run.session import sigterm_as_interrupt

    recipe = renamed("--recipe FILE", "the RECIPE argument", recipe_option, recipe)
    out_dir = renamed("--out", "--out-dir", out, out_dir)
    check_cache_mode(cache_mode)
    folder = out_dir / f"recurring-{dataset}"
    with sigterm_as_interrupt(), Progress("q") as bars:

        def progress(done: int, total: int, phase: str) -> None:
            if done and not phase:
                typer.echo(f"{folder}: resuming, {done} of {total} question-phases already done")
            bars("recurring", done, total, {"phase": phase[:24]} if phase else None)

        mode = cast("CacheMode", cache_mode)
        outcomes = rec.experiment(folder, load_recipe(recipe), dataset, limit,
                                  cache_mode=mode, progress=progress,
                                  recipe_path=recipe)  # fmt: skip
    typer.echo(rec.table(outcomes, dataset))
    typer.echo(f"saved to {folder}")


@reports_errors()
def ask(
    recipe: Annotated[
        str,
        typer.Argument(metavar="RECIPE", help="A method recipe (recipes/chainrag/ansint.yaml)."),
    ],
    question: Annotated[str | None, typer.Argument(help="The question.")] = None,
    context: Annotated[Path | None, typer.Option(help=CONTEXT_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the typed trace as JSON.")] = False,
    cache_mode: CacheModeOption = "use",
    set_: SetOption = None,
    llm: LLMOption = None,
    api_base: ApiBaseOption = None,
    recipe_option: OldRecipe = None,
    embedder: EmbedderOption = None,
    reranker: RerankerOption = None,
) -> None:
    """Answer one question over the given passages; print the answer and a readable trace."""
    from chainrag.core.trace import render
    from chainrag.data.datasets import load_context_file
    from chainrag.recipes.structure import unstructure
    from chainrag.run.question import ask as answer

    if recipe_option is not None:  # the old spelling: ask QUESTION --recipe FILE
        if question is not None:
            raise fail(
                "give the recipe once: ask RECIPE QUESTION (--recipe is the old spelling)", 2
            )
        deprecated("ask QUESTION --recipe FILE", "ask RECIPE QUESTION")
        recipe, question = str(recipe_option), recipe
    if question is None:
        raise fail("missing the QUESTION argument: chainrag ask RECIPE QUESTION --context FILE", 2)
    if context is None:
        raise fail("missing --context FILE: the passages to answer over", 2)
    check_cache_mode(cache_mode)
    changes = with_api_base(with_encoders(set_, embedder, reranker), api_base)
    loaded = changed_recipe(Path(recipe), changes, llm)
    prediction, texts = answer(loaded, question, load_context_file(context),
                               cache_mode=cast("CacheMode", cache_mode))  # fmt: skip
    if as_json:
        typer.echo(json.dumps(unstructure(prediction), indent=2, ensure_ascii=False))
    else:
        typer.echo(render(prediction, texts))
