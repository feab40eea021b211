"""The ``chainrag`` command line.

Commands: ``validate``, ``recipe show``, ``components``, ``datasets``, ``models fetch|list``,
``serve-llm``, ``standin``,
``index``, ``experiment``, ``ask``, ``run``, ``report``, ``compare``, ``walks``,
``integration-gap``, ``claims``, ``view``, ``train adapter|reranker``, ``cache [clear]``.
"""

from __future__ import annotations

import inspect
import json
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer

from chainrag import __version__
from chainrag.cli.analysis import claims, compare, integration_gap, walks
from chainrag.cli.cache import cache_app
from chainrag.cli.common import (
    ApiBaseOption,
    EmbedderOption,
    LLMOption,
    RerankerOption,
    SetOption,
    fail,
    reports_errors,
    show_notes,
    with_api_base,
    with_encoders,
)
from chainrag.cli.corpus import index_command
from chainrag.cli.datasets import datasets
from chainrag.cli.experiments import (
    filter_probe,
    judge_probe,
    judge_steps_probe,
    lost_in_retrieval,
    walk_steps_probe,
)
from chainrag.cli.models import models_app, serve_llm
from chainrag.cli.runs import ask, recurring, report, run
from chainrag.cli.standin import standin
from chainrag.cli.train import train_app
from chainrag.cli.view import view
from chainrag.core.heap import command_started, long_lived
from chainrag.recipes.describe import catalogue, catalogue_data, entry_lines
from chainrag.recipes.recipe import Recipe, dump_recipe
from chainrag.recipes.validation import notes, validate_paths

app = typer.Typer(
    name="chainrag",
    help="Multi-hop retrieval-augmented QA from small components composed by YAML recipes.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
recipe_app = typer.Typer(help="Inspect recipes.", no_args_is_help=True)
app.add_typer(recipe_app, name="recipe")
app.add_typer(models_app, name="models")
app.add_typer(cache_app, name="cache")
app.command("serve-llm")(serve_llm)
app.command("standin")(standin)
app.command("run")(run)
app.command("report")(report)
app.command("compare")(compare)
app.command("walks")(walks)
app.command("integration-gap")(integration_gap)
app.command("claims")(claims)
app.command("view")(view)
app.add_typer(train_app, name="train")
experiment_app = typer.Typer(help="Experiments of the papers.", no_args_is_help=True)
app.add_typer(experiment_app, name="experiment")
experiment_app.command("recurring")(recurring)
app.command("ask")(ask)
app.command("datasets")(datasets)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"chainrag {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Multi-hop retrieval-augmented QA from small components composed by YAML recipes."""


LoadPlugins = Annotated[
    bool,
    typer.Option(
        "--load-plugins",
        help="Import the recipes' plugins: modules (this runs their code) so that the "
        "components they provide are checked too.",
    ),
]


STYLES: dict[str, dict[str, Any]] = {"ok": {}, "part": {"fg": "yellow"},
                                     "fail": {"fg": "red", "err": True}}  # fmt: skip
"""How ``validate`` prints a file's line, by its state."""


@app.command()
def validate(
    paths: Annotated[
        list[Path], typer.Argument(help="Recipe files, or folders searched for *.yaml/*.yml.")
    ],
    load_plugins: LoadPlugins = False,
    set_: SetOption = None,
    llm: LLMOption = None,
    api_base: ApiBaseOption = None,
    embedder: EmbedderOption = None,
    reranker: RerankerOption = None,
) -> None:
    """Check recipes; print every problem with its path; exit 1 if any. With --set or --llm
    (one recipe file only), check the recipe with those changes.

    Validating runs no code a recipe names: a recipe's plugins: modules must exist but are not
    imported unless --load-plugins is given. A component kind that no built-in or installed
    (entry-point) component provides is then reported as "not checked" when the recipe names
    plugins, and that part of the recipe (its parameters, and checks spanning it) goes
    unchecked: the recipe is listed as "part" and does not fail. Without plugins, or with
    --load-plugins, an unknown kind is an error.

    base: files must lie in the recipe's tree (the nearest folder above the file named
    "recipes", else the file's own folder), in the repository's recipes/ folder, or in a folder
    listed in $CHAINRAG_RECIPE_ROOTS (separated by ":").
    """
    if set_ or llm or api_base or embedder or reranker:
        changes = with_api_base(with_encoders(set_, embedder, reranker), api_base)
        validate_changed(paths, changes, llm, load_plugins)
        return
    found = validate_paths(paths, load_plugins=load_plugins)
    for path in found.missing:
        typer.secho(f"FAIL {path}: no such file or folder", fg="red", err=True)
    for check in found.files:
        typer.secho(check.line(), **STYLES[check.state])
    if not found.files and not found.missing:
        raise fail("no recipe files found in " + ", ".join(map(str, paths)), prefix="")
    typer.echo(found.summary())
    if not found.ok:
        raise typer.Exit(1)


@reports_errors(prefix="")
def validate_changed(
    paths: list[Path], overrides: list[str] | None, llm: str | None, load_plugins: bool
) -> None:
    """``validate`` of one recipe file with ``--llm``/``--set`` applied."""
    from chainrag.recipes.overrides import check_changed, describe, parse_all

    if len(paths) != 1 or not paths[0].is_file():
        raise fail("--set and --llm apply to one recipe file: give exactly one", 2, prefix="")
    checked = check_changed(paths[0], parse_all(overrides or ()), llm, load_plugins=load_plugins)
    changes = " ".join(describe(overrides or (), llm))
    typer.echo(f"ok   {paths[0]} ({checked.name}) with {changes}{notes(checked.unchecked)}")


@app.command("recipes")
def recipes_command(
    folder: Annotated[
        Path | None,
        typer.Argument(
            metavar="FOLDER", help="Where to look (default: the recipes that come with chainrag)."
        ),
    ] = None,
) -> None:
    """List every recipe with its name and description (the YAML files under recipes/)."""
    from chainrag.recipes.listing import recipe_lines

    for line in recipe_lines(folder):
        typer.echo(line)


@recipe_app.command("show")
@reports_errors(prefix="")
def recipe_show(
    path: Annotated[Path, typer.Argument(metavar="RECIPE", help="A recipe file.")],
    load_plugins: LoadPlugins = False,
    set_: SetOption = None,
    llm: LLMOption = None,
    api_base: ApiBaseOption = None,
    embedder: EmbedderOption = None,
    reranker: RerankerOption = None,
) -> None:
    """Print the fully resolved recipe (bases merged, --llm and --set applied, defaults
    explicit) as YAML, then its digest as a comment: what a run folder of it resumes by.

    The recipe's plugins: modules are not imported unless --load-plugins is given; a recipe
    using components only they provide is then not shown (exit 1) and says so.
    """
    from chainrag.recipes.overrides import check_changed, parse_all

    changes = with_api_base(with_encoders(set_, embedder, reranker), api_base)
    checked = check_changed(path, parse_all(changes), llm, load_plugins=load_plugins)
    if checked.recipe is None:
        raise fail(f"{path}: not shown, parts need plugins{notes(checked.unchecked)}", prefix="")
    typer.echo(dump_recipe(checked.recipe), nl=False)
    typer.echo(digest_line(checked.recipe))


def digest_line(recipe: Recipe) -> str:
    """The recipe's digest as a YAML comment, with what it covers."""
    from chainrag.run.meta import recipe_digest

    return (f"# digest: {recipe_digest(recipe)} (a run folder of this recipe resumes by it; "
            "its name, description and how its LLM is reached are not part of it)")  # fmt: skip


@app.command()
@reports_errors(prefix="")
def components(
    stage: Annotated[
        str | None, typer.Option(help="Only this stage (e.g. rewrite_trigger).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every registered component per stage with its parameters, types and defaults."""
    if as_json:
        typer.echo(json.dumps(catalogue_data(stage), indent=2))
        return
    for name, entries in catalogue(stage):
        typer.secho(name, bold=True)
        for line in entry_lines(entries):
            typer.echo(line)


app.command("index")(index_command)


experiment_app.command("lost-in-retrieval")(lost_in_retrieval)
experiment_app.command("judge")(judge_probe)
experiment_app.command("judge-steps")(judge_steps_probe)
experiment_app.command("walk-steps")(walk_steps_probe)
experiment_app.command("filter")(filter_probe)


def _summaries(*apps: typer.Typer) -> None:
    """Give each command a one-paragraph summary for its group's command list.

    Typer's rich help keeps a docstring's hard line breaks there (the command's own ``--help``
    joins them), so wrapped docstrings came out broken mid-sentence; the summary is the first
    paragraph with its lines joined.
    """
    for group in apps:
        for info in group.registered_commands:
            doc = info.help or (inspect.getdoc(info.callback) if info.callback else None)
            if info.short_help is None and doc:
                info.short_help = " ".join(doc.split("\n\n")[0].split())


_summaries(app, recipe_app, experiment_app, models_app, train_app)


INTERNAL_ERROR = 70
"""The exit code of a crash (a bug in chainrag), told apart from 1 (an input was refused, each
problem named), 2 (a command line click could not parse) and 128 + N (stopped by signal N)."""


def entry() -> None:
    """The ``chainrag`` command: :data:`app`, with an unexpected exception reported as a bug
    and a deprecation as one ``note:`` line; what is alive when it ends is left to the OS, not
    walked by the interpreter's last garbage collection (:func:`~chainrag.core.heap.long_lived`)."""
    command_started()
    show_notes()
    try:
        app()
    except Exception as exc:
        from chainrag.core.credentials import redact

        sys.stderr.write(redact(traceback.format_exc()))
        typer.secho(
            f"INTERNAL ERROR: {type(exc).__name__} is a bug in chainrag, not a problem with your "
            "input; please report it with the traceback above (exit code 70)",
            fg="red", err=True,
        )  # fmt: skip
        sys.exit(INTERNAL_ERROR)
    finally:
        long_lived()
