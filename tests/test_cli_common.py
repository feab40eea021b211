"""The commands' shared error decorator and progress bars (chainrag/cli/common.py)."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from chainrag.cli.common import RESUME_HINT, Progress, fail, reports_errors
from chainrag.core.errors import ChainragError


def _app(error: Exception | None, hint: str | None = None) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @reports_errors(hint)
    def go(name: Annotated[str, typer.Option(help="a name")] = "x") -> None:
        """Say the name, or raise."""
        if error is not None:
            raise error
        typer.echo(f"hello {name}")

    return app


def test_the_decorated_command_keeps_its_options() -> None:
    result = CliRunner().invoke(_app(None), ["--name", "y"])
    assert result.exit_code == 0 and result.output == "hello y\n"
    assert "a name" in CliRunner().invoke(_app(None), ["--help"]).output


def test_a_refused_input_is_a_fail_line_and_exit_1() -> None:
    result = CliRunner().invoke(_app(ChainragError("data.json: record 3 has no 'question'")))
    assert result.exit_code == 1
    assert "FAIL data.json: record 3 has no 'question'" in result.output
    hinted = CliRunner().invoke(_app(ChainragError("bad"), RESUME_HINT))
    assert f"FAIL bad\n({RESUME_HINT})" in hinted.output


def test_any_other_exception_is_not_swallowed() -> None:
    result = CliRunner().invoke(_app(KeyError("bug")))
    assert result.exit_code == 1 and isinstance(result.exception, KeyError)


def test_fail_returns_the_exit_with_its_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert fail("no", 2).exit_code == 2
    assert "FAIL no" in capsys.readouterr().err


def test_progress_keeps_one_bar_per_label() -> None:
    with Progress("q", units={"embed": "sentence"}, leave=False) as progress:
        progress("split", 1, 10)
        progress("split", 4, 10, {"F1": "50.0"})
        progress("embed", 0, None)
        progress("embed", 7, 20)
        bars = dict(progress._bars)
        assert bars["split"].n == 4 and bars["split"].total == 10
        embed = bars["embed"]
        assert embed.unit == "sentence" and (embed.n, embed.total) == (7, 20)
    assert progress._bars == {}


def test_a_bar_is_closed_as_it_reaches_its_total_and_new_work_opens_another() -> None:
    """A finished stage's time stops with it (a bar left open until the last stage ended showed
    the embeddings of a 1M build taking 13 minutes, not their 27 s)."""
    with Progress("stage", leave=False, bar_of=lambda label: label.split(" ")[0]) as progress:
        progress("embed", 3, 20)
        embed = progress._bars["embed"]
        progress("embed", 20, 20)
        assert embed.disable and (embed.n, embed.total) == (20, 20)  # closed, its clock stopped
        progress("embed", 20, 20)  # once more at its total: nothing opens
        assert progress._bars["embed"] is embed
        progress("verifying a.gguf", 10, 10)
        progress("verifying b.gguf", 2, 10)  # new work under the same bar: a new one
        again = progress._bars["verifying"]
        assert not again.disable and again.desc.startswith("verifying b.gguf") and again.n == 2
