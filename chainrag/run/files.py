"""The files of run and experiment folders, written so that a killed process loses at most the
work in flight, and read back to resume: one implementation for ``chainrag run``'s folders
(:mod:`chainrag.run.folder`) and the recurring experiment's.

* A folder's finished work is a JSON Lines file, appended by :class:`LineWriter` one line per
  item with one ``write`` and an ``fsync``. :func:`finished` reads it back as typed records,
  cutting off a torn last line (a write a crash interrupted), so that a resumed process does
  only what has no line yet: nothing is lost and nothing is done twice.
* Its description (``run.json``) is replaced atomically by :func:`write_json`.
* :func:`locked` keeps a second process from writing the same folder.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from chainrag.core.credentials import redact
from chainrag.core.errors import ChainragError
from chainrag.run.record import RecordError

LOCK = ".lock"

T = TypeVar("T")


class RunError(ChainragError):
    """A run folder cannot be used as asked; the message names it and says why."""


# --------------------------------------------------------------------------- JSON lines


def read_lines(path: Path, *, repair: bool) -> tuple[list[dict[str, Any]], int]:
    """The records of a JSON Lines file and the number of bytes of a torn last line.

    A last line without its newline is a write cut off by a crash: with ``repair`` it is cut
    from the file (its item is done again). A complete line that is not a JSON object is not
    something a crash makes, so it is an error naming the file and line, and nothing is changed.
    """
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    torn = len(data) - end
    records = []
    for number, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RunError(
                f"{path}, line {number}: not a JSON line ({exc}); this is not a torn write, so "
                "the file is left as it is: fix or remove that line and run again"
            ) from None
        if not isinstance(record, dict):
            raise RunError(f"{path}, line {number}: expected a JSON object")
        records.append(record)
    if torn and repair:
        with path.open("r+b") as fh:
            fh.truncate(end)
            os.fsync(fh.fileno())
    return records, torn


def json_line(record: Mapping[str, Any]) -> bytes:
    """``record`` as one UTF-8 JSON line, whatever its strings hold.

    Text from an LLM or a dataset may hold a lone surrogate (``"Paris \\ud800"``), which UTF-8
    cannot encode; such a record is written with ASCII escapes instead (still valid JSON, and
    read back to the same strings), never dropped and never an exception.
    """
    try:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(record, separators=(",", ":")) + "\n").encode()


class LineWriter:
    """Appends JSON lines durably: one ``write`` per line, then ``fsync``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Mapping[str, Any]) -> None:
        view = memoryview(json_line(record))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LineWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_line(path: Path, number: int, line: Mapping[str, Any], read: Callable[[Any], T]) -> T:
    """One line of a run's JSONL file as a record; a RunError naming the file and the line
    (and every problem in it) otherwise."""
    try:
        return read(line)
    except RecordError as exc:
        raise RunError(f"{path}, line {number}: not a record of this version ({exc})") from None


def finished(path: Path, read: Callable[[Any], T], *, repair: bool) -> tuple[list[T], int]:
    """The items a JSON Lines file holds, each line read by ``read`` (a
    :class:`~chainrag.run.record.RecordError` becomes a RunError naming the file and the line),
    and the bytes of a torn last line, cut from the file with ``repair`` (see
    :func:`read_lines`)."""
    lines, torn = read_lines(path, repair=repair)
    return [read_line(path, n, line, read) for n, line in enumerate(lines, 1)], torn


# --------------------------------------------------------------------------- the folder


def write_json(path: Path, value: Any) -> None:
    """Replace ``path`` atomically by ``value`` as indented JSON, credentials masked
    (:func:`chainrag.core.credentials.redact`) and any lone surrogate written as an escape."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
        text.encode()
    except UnicodeEncodeError:
        text = json.dumps(value, indent=2) + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(redact(text), encoding="utf-8")
    os.replace(tmp, path)


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's lock, or fail at once naming the process that holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / LOCK).open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise RunError(f"{folder}: another chainrag run ({holder}) is writing it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        try:
            yield
        finally:
            fh.truncate(0)
            fcntl.flock(fh, fcntl.LOCK_UN)
