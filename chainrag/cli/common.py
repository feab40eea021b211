"""What every command shares: one way to report a refused input, one progress bar
(:class:`~chainrag.core.progress.Progress`, which the Python API uses too).

A command parses its options, calls one library function and prints. Errors the user can fix
(:class:`~chainrag.core.errors.ChainragError`, each naming its input) become ``FAIL message`` in red
on stderr and exit 1 through :func:`reports_errors`; anything else reaches
:func:`chainrag.cli.entry`, which reports it as a bug (exit 70).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from chainrag.core.errors import ChainragError
from chainrag.core.progress import Progress

__all__ = ["RESUME_HINT", "Progress", "fail", "reports_errors"]

P = ParamSpec("P")
R = TypeVar("R")

RESUME_HINT = "finished work is kept; run the same command to resume"


def fail(message: str, code: int = 1, *, prefix: str = "FAIL ") -> typer.Exit:
    """Print ``FAIL message`` in red on stderr; the exit to raise (``raise fail(...)``).

    ``prefix=""`` prints the message alone (as click prints a usage error).
    """
    typer.secho(f"{prefix}{message}", fg="red", err=True)
    return typer.Exit(code)


def reports_errors(
    hint: str | None = None, *, prefix: str = "FAIL "
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a command: a :class:`ChainragError` it raises is printed by :func:`fail`
    (followed by ``(hint)`` when given, e.g. :data:`RESUME_HINT`; after ``prefix``) and exits 1.

    The command keeps its signature (``functools.wraps``), so typer reads its options as before.
    """

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(command)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return command(*args, **kwargs)
            except ChainragError as exc:
                raise fail(f"{exc}\n({hint})" if hint else str(exc), prefix=prefix) from None

        return wrapper

    return decorate
