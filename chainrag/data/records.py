"""Reading a dataset file and checking its records: every problem named with its place.

A file is read as bytes, decoded as UTF-8 and parsed as JSON or JSON Lines
(:func:`read_records`); its records are checked against a spec (:mod:`chainrag.data.specs`) by
:func:`checked`, which raises one :class:`DatasetError` listing each bad record with its line
(JSON Lines) or record (JSON), the field and what was expected, e.g. ``line 3, field
'answer_aliases': expected a list of strings, got 'Richland'``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from chainrag.core.errors import ChainragError
from chainrag.data.specs import Spec, shown

MAX_LISTED = 20
"""How many problems a :class:`DatasetError` lists before "... and N more problems"."""


@attrs.frozen
class BadRecord:
    """One problem of one record, e.g. ``line 3, field 'answer': expected a non-empty string,
    got null``. ``field`` is the path inside the record, "" for the record itself."""

    place: str  # "line 3" (JSON Lines), "record 3" (JSON array) or "title 'X'" (a corpus map)
    field: str
    problem: str

    def __str__(self) -> str:
        where = f"{self.place}, field {self.field!r}" if self.field else self.place
        return f"{where}: {self.problem}"


class DatasetError(ChainragError):
    """A dataset file is missing or malformed; the message names the file and the place.

    ``problems`` holds every bad record found where the file was checked record by record.
    """

    def __init__(self, message: str, problems: Sequence[BadRecord] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


class Unreadable(Exception):  # noqa: N818 (a value of the file, not an error of the program)
    """Bytes that are not UTF-8, or text that is not JSON; ``line``/``column`` where known."""

    def __init__(self, reason: str, line: int = 0, column: int = 0) -> None:
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        reason = f"not UTF-8 (byte 0x{data[exc.start]:02x})"
        raise Unreadable(reason, line, exc.start - line_start + 1) from None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise Unreadable("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise Unreadable(f"invalid JSON: {str(exc).partition(';')[0]}") from None


def read_bytes(path: Path, what: str = "file") -> bytes:
    if not path.is_file():
        raise DatasetError(f"{path}: no such {what}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from None


def read_json(path: Path, what: str = "file") -> Any:
    """The JSON document in ``path``; one that is not UTF-8 or not JSON is a DatasetError."""
    try:
        return _json(decode(read_bytes(path, what)))
    except Unreadable as exc:
        where = f", line {exc.line}" if exc.line else ""
        raise DatasetError(f"{path}{where}: {exc.reason}") from None


def _jsonl_values(data: bytes) -> Iterator[tuple[str, Any]]:
    """(``line N``, value) of each non-blank line; a line that cannot be read is Unreadable."""
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            text = decode(raw)
            if text.strip():
                yield f"line {number}", _json(text)
        except Unreadable as exc:
            yield f"line {number}", exc


def question_records(path: Path) -> list[tuple[str, Any]]:
    """(place, record) pairs of a JSON Lines or JSON-array file, as read, before any check."""
    if path.suffix == ".jsonl":
        return list(_jsonl_values(read_bytes(path, "file (set $CHAINRAG_DATA to the data folder)")))
    data = read_json(path, "file (set $CHAINRAG_DATA to the data folder)")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of questions, got {shown(data)}")
    return [(f"record {i}", record) for i, record in enumerate(data, 1)]


def read_records(path: Path) -> list[tuple[str, Any]]:
    """(place, record) pairs of any question file, as read, before any check: a JSON array when
    its first character is ``[`` (``record N``), else JSON Lines (``line N``), whatever the
    suffix. A line that cannot be read is kept as a value :func:`readable` refuses."""
    data = read_bytes(path)
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        lines = list(_jsonl_values(data))
        if len(lines) > 1 and not readable(lines[0][1]):
            _one_document(path, data)
        return lines
    try:
        array = _json(decode(data))
    except Unreadable as exc:
        where = f", line {exc.line}" if exc.line else ""
        raise DatasetError(f"{path}{where}: {exc.reason}") from None
    return [(f"record {i}", record) for i, record in enumerate(array, 1)]


def _one_document(path: Path, data: bytes) -> None:
    """Raise if ``data``, whose first line is not JSON, is one JSON document over several
    lines (an object, such as HippoRAG's title → sentences corpus): not a file of questions."""
    try:
        whole = _json(decode(data))
    except Unreadable:
        return
    lines = len(data.splitlines())
    raise DatasetError(
        f"{path}: expected questions as a JSON array or as JSON Lines (one per line), got "
        f"{shown(whole)} over {lines} lines"
    )


def readable(value: Any) -> bool:
    """False for a line of :func:`read_records` that is not UTF-8 or not JSON."""
    return not isinstance(value, Unreadable)


def _record_problems(place: str, value: Any, spec: Spec) -> Iterator[BadRecord]:
    if isinstance(value, Unreadable):
        column = f" at column {value.column}" if value.column else ""
        yield BadRecord(place, "", value.reason + column)
        return
    for field, problem in spec.problems(value, ""):
        yield BadRecord(place, field, problem)


def checked(
    path: Path, records: Sequence[tuple[str, Any]], spec: Spec, what: str
) -> Sequence[tuple[str, Any]]:
    """The (place, record) pairs if there is at least one and each matches ``spec``; else a
    DatasetError that lists every bad record (the first :data:`MAX_LISTED` problems)."""
    problems = [bad for place, value in records for bad in _record_problems(place, value, spec)]
    if problems:
        raise _bad_records(path, what, problems)
    if not records:
        raise DatasetError(f"{path}: no records (an empty {what} file)")
    return records


def _bad_records(path: Path, what: str, problems: Sequence[BadRecord]) -> DatasetError:
    count = len({p.place for p in problems})
    head = (
        f"{path}: {_count(count, 'record')} not in the {what} format "
        f"({_count(len(problems), 'problem')}):"
    )
    listed = [f"  - {p}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        listed.append(f"  - ... and {len(problems) - MAX_LISTED} more problems")
    return DatasetError("\n".join([head, *listed]), problems)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
