"""The ``chainrag`` command line.

Commands so far: ``validate``, ``recipe show``, ``components``. The model, index, run and report
commands attach here as sub-commands when their issues land.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from chainrag import __version__
from chainrag.describe import catalogue, params
from chainrag.errors import ChainragError, RecipeError
from chainrag.recipe import dump_recipe, load_recipe, recipe_files
from chainrag.registry import REGISTRIES

app = typer.Typer(
    name="chainrag",
    help="Multi-hop retrieval-augmented QA from small components composed by YAML recipes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
recipe_app = typer.Typer(help="Inspect recipes.", no_args_is_help=True)
app.add_typer(recipe_app, name="recipe")


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


@app.command()
def validate(
    paths: Annotated[
        list[Path], typer.Argument(help="Recipe files, or folders searched for *.yaml/*.yml.")
    ],
) -> None:
    """Check recipes; print every problem with its path; exit 1 if any."""
    files = recipe_files(paths)
    missing = [p for p in paths if not p.exists()]
    bad = 0
    for path in missing:
        typer.secho(f"FAIL {path}: no such file or folder", fg="red", err=True)
    for path in (f for f in files if f.exists()):
        try:
            recipe = load_recipe(path)
        except ChainragError as exc:
            bad += 1
            typer.secho(f"FAIL {exc}", fg="red", err=True)
            continue
        typer.echo(f"ok   {path} ({recipe.name})")
    checked = len([f for f in files if f.exists()])
    if checked == 0 and not missing:
        typer.secho("no recipe files found in " + ", ".join(map(str, paths)), fg="red", err=True)
        raise typer.Exit(1)
    typer.echo(
        f"{checked - bad} of {checked} recipes valid"
        + (f"; {len(missing)} paths missing" if missing else "")
    )
    if bad or missing:
        raise typer.Exit(1)


@recipe_app.command("show")
def recipe_show(path: Annotated[Path, typer.Argument(help="A recipe file.")]) -> None:
    """Print the fully resolved recipe (bases merged, defaults explicit) as YAML."""
    try:
        typer.echo(dump_recipe(load_recipe(path)), nl=False)
    except RecipeError as exc:
        typer.secho(str(exc), fg="red", err=True)
        raise typer.Exit(1) from None


@app.command()
def components(
    stage: Annotated[
        str | None, typer.Option(help="Only this stage (e.g. rewrite_trigger).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every registered component per stage with its parameters, types and defaults."""
    stages = [r.stage for r in REGISTRIES]
    if stage is not None and stage not in stages:
        typer.secho(f"unknown stage {stage!r}; stages: {', '.join(stages)}", fg="red", err=True)
        raise typer.Exit(1)
    listing = catalogue(stage)
    if as_json:
        data = {
            name: {
                e.key: {
                    "summary": e.summary,
                    "params": [
                        {"name": p.name, "type": p.type, "default": p.default}
                        for p in params(e.cls)
                    ],
                }
                for e in entries
            }
            for name, entries in listing
        }
        typer.echo(json.dumps(data, indent=2))
        return
    for name, entries in listing:
        typer.secho(f"{name}", bold=True)
        if not entries:
            typer.echo("  (none yet)")
        for e in entries:
            typer.echo(f"  {e.key}: {e.summary}")
            for p in params(e.cls):
                typer.echo(f"      {p.name}: {p.type} = {json.dumps(p.default)}")
