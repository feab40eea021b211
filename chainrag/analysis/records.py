"""An analysis's errors that name the run folder it read (the reading itself is
:mod:`chainrag.run.reading`'s)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chainrag.run.files import RunError


@contextmanager
def reading(source: Path) -> Iterator[None]:
    """Report a record an analysis cannot use as a RunError naming ``source`` (e.g. a
    baseline's run given to an analysis of ChainRAG's two answers), not as a crash."""
    try:
        yield
    except ValueError as exc:
        raise RunError(f"{source}: {exc}") from None
