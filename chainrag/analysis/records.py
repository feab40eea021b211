"""Reading a run folder's records for an analysis, with errors that name the folder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chainrag.run.files import RunError
from chainrag.run.folder import PREDICTIONS, RunDir
from chainrag.run.record import RunRecord


def predictions_file(folder: Path) -> Path:
    """The folder's predictions file; a RunError naming the folder if there is none."""
    path = folder / PREDICTIONS
    if not path.is_file():
        raise RunError(f"{folder}: no {PREDICTIONS} — no such file (not a run directory?)")
    return path


def predictions(folder: Path) -> list[RunRecord]:
    """The finished records of a run folder, read without changing it (a torn last line is
    ignored; :meth:`~chainrag.run.folder.RunDir.records`); a RunError naming the folder when
    it has no predictions file, no line yet, or a line that is not a record."""
    path = predictions_file(folder)
    records, _ = RunDir(folder).records(repair=False)
    if not records:
        raise RunError(f"{path}: no predictions yet")
    return records


@contextmanager
def reading(source: Path) -> Iterator[None]:
    """Report a record an analysis cannot use as a RunError naming ``source`` (e.g. a
    baseline's run given to an analysis of ChainRAG's two answers), not as a crash."""
    try:
        yield
    except ValueError as exc:
        raise RunError(f"{source}: {exc}") from None
