"""What every command shares: one way to report a refused input, one progress bar.

A command parses its options, calls one library function and prints. Errors the user can fix
(:class:`~chainrag.core.errors.ChainragError`, each naming its input) become ``FAIL message`` in red
on stderr and exit 1 through :func:`reports_errors`; anything else reaches
:func:`chainrag.cli.entry`, which reports it as a bug (exit 70).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any, ParamSpec, TypeVar

import typer

from chainrag.core.errors import ChainragError

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


class Progress:
    """tqdm bars fed by ``(done, total)`` callbacks, one per label: units/s and time left.

    ``progress("embed", 1200, 23308)`` moves the ``embed`` bar to 1,200 of 23,308; a new label
    opens its own bar (closed bars are left on screen unless ``leave=False``). ``postfix`` is
    shown after the rate (e.g. a running F1). tqdm is imported on the first call.

    Args:
        unit: Each bar's unit, unless ``units`` names one for its bar.
        unit_scale: Whether counts are shown scaled (``1.2M``): for every bar, or for the bars
            named.
        leave: Whether a closed bar stays on screen.
        bar_of: The bar a label feeds when several labels share one (e.g. ``part 3/22`` and
            ``part 4/22`` the ``part`` bar); the bar shows the latest label. By default each
            label has its own.
        single: Opening a bar closes the others: one bar on screen at a time.
    """

    def __init__(
        self,
        unit: str = "it",
        *,
        units: dict[str, str] | None = None,
        unit_scale: bool | Collection[str] = False,
        leave: bool = True,
        bar_of: Callable[[str], str] | None = None,
        single: bool = False,
    ) -> None:
        self.unit = unit
        self.units = units or {}
        self.unit_scale = unit_scale
        self.leave = leave
        self.bar_of = bar_of
        self.single = single
        self._bars: dict[str, Any] = {}

    def __call__(
        self, label: str, done: int, total: int | None, postfix: dict[str, Any] | None = None
    ) -> None:
        key = self.bar_of(label) if self.bar_of else label
        bar = self._bars.get(key)
        if bar is None:
            from tqdm import tqdm

            if self.single:
                self.close()
            scale = self.unit_scale
            scale = scale if isinstance(scale, bool) else key in scale
            unit = self.units.get(key, self.unit)
            bar = tqdm(total=total or None, initial=done, desc=label, unit=unit,
                       unit_scale=scale, leave=self.leave)  # fmt: skip
            self._bars[key] = bar
        elif key != label:
            bar.set_description(label, refresh=False)
        if total and bar.total != total:
            bar.total = total
        bar.n = done
        if postfix:
            bar.set_postfix(postfix, refresh=False)
        bar.refresh()

    def close(self) -> None:
        """Close every bar opened."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
