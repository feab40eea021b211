"""Progress bars for long work, fed by ``(label, done, total)`` callbacks: the command line's
and the Python API's (:mod:`chainrag.api`) alike. tqdm is imported on the first bar."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Iterator
from typing import Any

TICK_SECONDS = 1.0
"""How often :func:`ticking` moves a step's clock."""


class Progress:
    """tqdm bars fed by ``(done, total)`` callbacks, one per label: units/s and time left.

    ``progress("embed", 1200, 23308)`` moves the ``embed`` bar to 1,200 of 23,308; a new label
    opens its own bar; a bar that reaches its total is closed then, its time stopped (closed
    bars are left on screen unless ``leave=False``). ``postfix`` is shown after the rate (e.g.
    a running F1). tqdm is imported on the first call.

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
        if bar is not None and bar.disable and not (total and done >= total):
            bar = None  # closed at its total: new work (another file to verify) opens a new one
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
        if total and done >= total:
            bar.close()  # its clock stops when its work does, not when the last bar's does

    def close(self) -> None:
        """Close every bar opened."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def ticking(
    progress: Callable[[str, int, int], None] | None, label: str, every: float = TICK_SECONDS
) -> Iterator[None]:
    """A step that reports no progress of its own (a graph layer built by one call) shown as
    ``label`` at 0 of 1 while it runs, its clock moving (``progress(label, 0, 1)`` every
    ``every`` seconds, from a thread of its own), and at 1 of 1 once it has ended without an
    error. Nothing without ``progress``."""
    if progress is None:
        yield
        return
    done = threading.Event()

    def tick() -> None:
        while not done.wait(every):
            progress(label, 0, 1)

    progress(label, 0, 1)
    clock = threading.Thread(target=tick, name=f"ticking {label}", daemon=True)
    clock.start()
    try:
        yield
    finally:
        done.set()
        clock.join()
    progress(label, 1, 1)
