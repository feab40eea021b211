"""Reading a run folder's records for an analysis, with errors that name the folder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chainrag.runs import PREDICTIONS, RunError, read_lines


def predictions_file(folder: Path) -> Path:
    """The folder's predictions file; a RunError naming the folder if there is none."""
    path = folder / PREDICTIONS
    if not path.is_file():
        raise RunError(f"{folder}: no {PREDICTIONS} — no such file (not a run directory?)")
    return path


def predictions(folder: Path) -> list[dict[str, Any]]:
    """The finished records of a run folder, read without changing it (a torn last line is
    ignored); a RunError naming the folder when it has no predictions file or no line yet."""
    path = predictions_file(folder)
    records, _ = read_lines(path, repair=False)
    if not records:
        raise RunError(f"{path}: no predictions yet")
    return records


@contextmanager
def reading(source: Path) -> Iterator[None]:
    """Report a record an analysis cannot read as a RunError naming ``source`` (a run folder
    whose records lack a field or hold another shape, e.g. a baseline's run given to an
    analysis of ChainRAG's traces), not as a crash."""
    try:
        yield
    except KeyError as exc:
        raise RunError(f"{source}: a record has no {exc} field (a run of another kind?)") from None
    except (TypeError, AttributeError, IndexError) as exc:
        raise RunError(f"{source}: a record of another shape ({exc})") from None
    except ValueError as exc:
        raise RunError(f"{source}: {exc}") from None
