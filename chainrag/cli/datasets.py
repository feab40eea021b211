"""``chainrag datasets``: the named datasets and corpora, and their licences."""

from __future__ import annotations

from typing import Annotated

import typer

from chainrag.cli.common import reports_errors


@reports_errors()
def datasets(
    licence: Annotated[
        str | None,
        typer.Option(
            "--licence",
            metavar="NAME",
            help="Print the licence of the dataset or corpus NAME (its full text where it "
            "ships with the data) instead of the list.",
        ),
    ] = None,
) -> None:
    """List every named dataset (--dataset NAME) and corpus (--corpus NAME): questions or
    passages, setting, source and licence. They ship with chainrag; $CHAINRAG_DATA points the
    names at another copy, and --dataset PATH reads your own file."""
    from chainrag.core.paths import data_root
    from chainrag.data.catalogue import DERIVED, catalogue, licence_text

    if licence is not None:
        typer.echo(licence_text(licence), nl=False)
        return
    entries = catalogue()
    typer.echo(f"Named datasets and corpora (in {data_root()}):\n")
    typer.echo("| name | kind | count | setting | source | licence |")
    typer.echo("|---|---|---|---|---|---|")
    for e in entries:
        unit = "questions" if e.kind == "questions" else "passages"
        typer.echo(
            f"| {e.name} | {e.kind} | {e.count:,} {unit} | {e.setting} | {e.about.source} | "
            f"{e.about.licence.name} |"
        )
    typer.echo("\nMade from them, for --dataset:\n")
    for name, what in DERIVED:
        typer.echo(f"  {name:<12} {what}")
    typer.echo(
        "\nA licence's full text: chainrag datasets --licence NAME. The full official dev sets "
        "and how to read them: chainrag/data/files/README.md."
    )
