"""``chainrag view`` (attached to :mod:`chainrag.cli.main`): writes the HTML page of run
folders through :func:`chainrag.view.write_view` and says where it went."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chainrag.cli.common import reports_errors

BUILD_HELP = (
    "Build the indexes missing from the index cache (as `chainrag run` built them: the recipe's "
    "spaCy and embedding models, a few seconds a question) so that unit texts and the walks' "
    "edges are shown; without it they come from the cache only."
)


@reports_errors()
def view(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
    out: Annotated[Path, typer.Option(help="The HTML file to write.")] = Path("view.html"),
    build_index: Annotated[bool, typer.Option("--build-index", help=BUILD_HELP)] = False,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Leave out the plots.")] = False,
) -> None:
    """One self-contained HTML page of the runs: the methods side by side per dataset, the
    questions filtered by dataset, method, right/wrong, disagreement and text, and each
    question's traces step by step against the gold evidence, with its graph walk as SVG."""
    from chainrag.view import write_view

    page = write_view(
        runs,
        out,
        build_index=build_index,
        plots=not no_plots,
        progress=lambda message: typer.echo(message, err=True),
    )
    for note in page.notes:
        typer.secho(f"note: {note}", fg="yellow", err=True)
    typer.echo(f"{out}: {page.questions} questions from {page.runs} runs")
