"""``chainrag experiment lost-in-retrieval|judge|judge-steps|walk-steps|filter``: the probe
experiments.

Each command calls one function of :mod:`chainrag.experiments` and prints the table it saved
(``recurring``, which answers questions through the run machinery, is in ``cli_runs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from chainrag.cli.common import (
    Progress,
    SetOption,
    changed_recipe,
    fail,
    renamed,
    reports_errors,
)
from chainrag.cli.runs import check_cache_mode

if TYPE_CHECKING:
    from chainrag.experiments.probes import LLMProbe
    from chainrag.llm.cache import CacheMode

# The options the LLM probes (judge, filter) share.
ProbeDataset = Annotated[str, typer.Option(help="musique, hotpotqa or 2wiki.")]
ProbeLimit = Annotated[int, typer.Option(min=1, help="Questions probed.")]
ProbeOut = Annotated[Path, typer.Option("--out-dir", help="Folder for the probe's results.")]
OldOut = Annotated[
    Path | None, typer.Option("--out", hidden=True, help="Old spelling of --out-dir.")
]
OldRecipe = Annotated[
    Path | None, typer.Option("--recipe", hidden=True, help="Old spelling of the RECIPE argument.")
]


def recipe_arg(text: str) -> Any:
    """The optional RECIPE argument of an experiment (its default named in the help)."""
    return typer.Argument(metavar="RECIPE", help=text, show_default=True)


ProbeCacheMode = Annotated[
    str,
    typer.Option(
        help="LLM response cache: use (default: a stopped probe, run again, redoes nothing it "
        "had asked), bypass or refresh."
    ),
]


@reports_errors()
def lost_in_retrieval(
    recipe: Annotated[Path, recipe_arg("Recipe whose index.embedder ranks the paragraphs.")] = Path(
        "recipes/index/sentence_graph.yaml"
    ),
    dataset: Annotated[str, typer.Option(help="Needs gold decompositions: musique.")] = "musique",
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    out_dir: ProbeOut = Path("runs"),
    recipe_option: OldRecipe = None,
    out: OldOut = None,
) -> None:
    """Recall@2 of sub-question 1, and of sub-question 2 with a pronoun vs. the gold answer."""
    from chainrag.experiments import lost_in_retrieval as lir

    recipe = renamed("--recipe FILE", "the RECIPE argument", recipe_option, recipe)
    out_dir = renamed("--out", "--out-dir", out, out_dir)
    with Progress("question") as bars:
        saved = lir.experiment(recipe, dataset, limit, out_dir, bars)
    say_saved(saved.table, saved.folder)


def judge_probe(
    recipe: Annotated[Path, recipe_arg("A recipe whose expander has a judge.")] = Path(
        "recipes/chainrag/ansint.yaml"
    ),
    dataset: ProbeDataset = "musique",
    limit: ProbeLimit = 20,
    out_dir: ProbeOut = Path("runs"),
    cache_mode: ProbeCacheMode = "use",
    recipe_option: OldRecipe = None,
    out: OldOut = None,
) -> None:
    """Does the recipe's sufficiency judge tell enough evidence from too little? Asks it about
    each question's gold paragraphs, the gold minus one, and as many distractors; prints the
    share of "yes" for each."""
    from chainrag.experiments import judge

    recipe = renamed("--recipe FILE", "the RECIPE argument", recipe_option, recipe)
    out_dir = renamed("--out", "--out-dir", out, out_dir)
    llm_probe(judge.PROBE, recipe, dataset, limit, out_dir, cache_mode)


@reports_errors()
def judge_steps_probe(
    recipe: Annotated[Path, recipe_arg("A recipe with an index embedder and an LLM.")] = Path(
        "recipes/chainrag/ansint.yaml"
    ),
    dataset: Annotated[
        str, typer.Option(help="Questions measured: a set with MuSiQue's gold decompositions.")
    ] = "musique",
    train: Annotated[
        str,
        typer.Option(
            help="Questions the thresholds and the combined judge are chosen on ('' for none)."
        ),
    ] = "musique_train",
    limit: Annotated[int, typer.Option(min=1, help="Questions probed in each set.")] = 100,
    paragraphs: Annotated[
        int,
        typer.Option(min=1, help="Paragraphs a probe (more: nearer a walk's evidence length)."),
    ] = 2,
    similarity_units: Annotated[
        str,
        typer.Option(
            help="paragraphs: a probe's similarity is its best paragraph's cosine; sentences: "
            "its best sentence's (what the similarity judge sees in a walk)."
        ),
    ] = "paragraphs",
    out_dir: ProbeOut = Path("runs"),
    cache_mode: ProbeCacheMode = "use",
) -> None:
    """Does a sufficiency judge tell a sub-question's evidence that holds its gold paragraph
    from evidence that does not? Probes each MuSiQue step with its gold paragraph and with
    the next-best paragraphs instead; prints each judge's ROC AUC (the 1.5B reply, its P(yes),
    embedding similarity, word overlap, their combination) and its yes-rates at a threshold
    chosen on the training questions."""
    from chainrag.experiments import judge_steps

    check_cache_mode(cache_mode)
    with Progress("question") as bars:
        mode = cast("CacheMode", cache_mode)
        saved = judge_steps.experiment(
            recipe, dataset, train or None, limit, out_dir, mode, bars, paragraphs,
            similarity_units,
        )  # fmt: skip
    say_saved(saved.table, saved.folder)


@reports_errors()
def walk_steps_probe(
    recipes: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="RECIPE...",
            help="ChainRAG recipes whose walk's judge needs no LLM (similarity, none); one "
            "row each. Default: recipes/variants/similarity_judge.yaml.",
            show_default=False,
        ),
    ] = None,
    dataset: Annotated[
        str, typer.Option(help="Questions with MuSiQue's gold decompositions.")
    ] = "long:musique",
    limit: Annotated[int, typer.Option(min=1, help="Questions walked.")] = 30,
    overrides: SetOption = None,
    vary: Annotated[
        str | None,
        typer.Option(
            metavar="PATH=V1,V2,…",
            help="Walk each recipe once per value of one field, a row each "
            "(--vary retrieval.expander.judge.threshold=0.55,0.6 or --vary "
            "retrieval.seed.k=1,2,3).",
        ),
    ] = None,
    out_dir: ProbeOut = Path("runs"),
) -> None:
    """Does the walk go on where it must? Walks each MuSiQue gold step (#k as step k's gold
    answer) with each recipe's retrieval, no LLM; prints, for steps with and without their
    gold paragraph at the seeds, the walks past the first hop, those that reach it, and the
    words read."""
    from chainrag.experiments import walk_steps

    files = recipes or [Path("recipes/variants/similarity_judge.yaml")]
    field, values = varied(vary)
    resolved = []
    for path in files:
        for value in values:
            changed = [*(overrides or []), *([f"{field}={value}"] if field else [])]
            recipe = changed_recipe(path, changed, None)
            resolved.append((f"{recipe.name}[{field}={value}]" if field else recipe.name, recipe))
    with Progress("question") as bars:
        saved = walk_steps.experiment(resolved, dataset, limit, out_dir, bars, overrides or [])
    say_saved(saved.table, saved.folder)


def varied(vary: str | None) -> tuple[str, list[str]]:
    """``--vary PATH=V1,V2,…`` as the field and its values; ("", [""]) when not given."""
    if vary is None:
        return "", [""]
    field, sep, values = vary.partition("=")
    listed = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not field.strip() or not listed:
        raise fail(f"--vary {vary}: expected PATH=V1,V2,… such as retrieval.seed.k=1,2,3")
    return field.strip(), listed


def filter_probe(
    recipe: Annotated[Path, recipe_arg("A recipe whose method has a knowledge filter.")] = Path(
        "recipes/seeds/four_module.yaml"
    ),
    dataset: ProbeDataset = "musique",
    limit: ProbeLimit = 20,
    out_dir: ProbeOut = Path("runs"),
    cache_mode: ProbeCacheMode = "use",
    recipe_option: OldRecipe = None,
    out: OldOut = None,
) -> None:
    """Does the recipe's knowledge filter keep the evidence and drop the rest? Gives it each
    question's gold paragraphs and as many distractors, one at a time; prints the share kept
    of each."""
    from chainrag.experiments import filter_probe as fp

    recipe = renamed("--recipe FILE", "the RECIPE argument", recipe_option, recipe)
    out_dir = renamed("--out", "--out-dir", out, out_dir)
    llm_probe(fp.PROBE, recipe, dataset, limit, out_dir, cache_mode)


@reports_errors()
def llm_probe(
    probe: LLMProbe[Any, Any], recipe: Path, dataset: str, limit: int, out: Path, cache_mode: str
) -> None:
    """Run an LLM probe (:func:`chainrag.experiments.probes.run_llm_probe`) with a bar over
    the questions and print its table; a bad ``--cache-mode`` exits 2, a refused input 1."""
    from chainrag.experiments.probes import run_llm_probe

    check_cache_mode(cache_mode)
    with Progress("question") as bars:
        mode = cast("CacheMode", cache_mode)
        saved = run_llm_probe(probe, recipe, dataset, limit, out, mode, bars)
    say_saved(saved.table, saved.folder)


def say_saved(table: str, folder: Path) -> None:
    """Print a probe experiment's table and where it was saved."""
    typer.echo(table)
    typer.echo(f"saved to {folder}")
