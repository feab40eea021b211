"""Passages of a corpus, read as a stream: a JSON array or JSON Lines file, or a named corpus.

    for passage in read_passages(["2wiki_hipporag_corpus", "dev:2wiki"]): ...

Files: HippoRAG's ``[{title, text}, ...]`` JSON array (read incrementally, never parsed whole),
or JSON Lines of ``{title, text}`` / ``{id, title, text}``. Names: the corpora
:func:`chainrag.data.load_corpus` knows (``musique_train_corpus``,
``hotpotqa_train_corpus``, ``2wiki_hipporag_corpus``), and
``dev:NAME`` — every passage of a dev set's questions (``dev:2wiki``), the shared-corpus setting
in which each question's own paragraphs are part of the corpus. Several sources are read in
order; a passage whose (title, text) was already read is skipped, so the same paragraph in two
sources is indexed once. A record that is not a passage is a :class:`CorpusError` naming the
file, the record and the field.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from chainrag.core.errors import ChainragError
from chainrag.core.types import Passage

DEV_PREFIX = "dev:"
_CHUNK = 1 << 20
_MAX_RECORD = 64 << 20
"""A record that is still not valid JSON after this many characters is an error."""


class CorpusError(ChainragError):
    """A corpus source cannot be read; the message names the file, the record and the field."""


def is_file_source(source: str) -> bool:
    return source.endswith((".json", ".jsonl")) or "/" in source


def read_passages(sources: Sequence[str]) -> Iterator[Passage]:
    """Every passage of ``sources`` in order, each (title, text) once; pids are ``0..N-1``."""
    seen: set[str] = set()
    count = 0
    for source in sources:
        stream = _file(Path(source)) if is_file_source(source) else iter(_named(source))
        for passage in stream:
            key = hashlib.sha1(f"{passage.title}\x00{passage.text}".encode()).hexdigest()  # noqa: S324 - a dedup key
            if key in seen:
                continue
            seen.add(key)
            yield Passage(str(count), passage.title, passage.text)
            count += 1


def _named(name: str) -> list[Passage]:
    from chainrag.data.datasets import DatasetError, load_corpus, load_dataset

    try:
        if name.startswith(DEV_PREFIX):
            examples = load_dataset(name.removeprefix(DEV_PREFIX))
            return [p for e in examples for p in e.passages]
        return load_corpus(name)
    except DatasetError as exc:
        raise CorpusError(str(exc)) from None


def _file(path: Path) -> Iterator[Passage]:
    if not path.is_file():
        raise CorpusError(f"{path}: no such corpus file")
    records = _json_lines(path) if path.suffix == ".jsonl" else _json_array(path)
    for where, record in records:
        yield _passage(record, path, where)


def _passage(record: Any, path: Path, where: str) -> Passage:
    if not isinstance(record, dict):
        raise CorpusError(
            f"{path}, {where}: expected a {{title, text}} object, got {_kind(record)}"
        )
    for field in ("title", "text"):
        if field not in record:
            raise CorpusError(f"{path}, {where}: field {field!r} is missing")
        if not isinstance(record[field], str):
            raise CorpusError(
                f"{path}, {where}: field {field!r} must be a string, got {_kind(record[field])}"
            )
    if not record["text"].strip():
        raise CorpusError(f"{path}, {where}: field 'text' is empty")
    return Passage(str(record.get("id", "")), record["title"], record["text"])


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _json_lines(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            yield f"line {number}", _loads(raw, path, f"line {number}")


def _loads(raw: bytes, path: Path, where: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}, {where}: not UTF-8 (byte 0x{raw[exc.start]:02x})") from None
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise CorpusError(f"{path}, {where}: invalid JSON ({exc})") from None


def _json_array(path: Path) -> Iterator[tuple[str, Any]]:
    """The items of a top-level JSON array, decoded one at a time from 1 MiB reads."""
    decoder = json.JSONDecoder()
    with path.open("rb") as fh:
        reader = _Text(fh, path)
        reader.skip_space()
        if reader.peek() != "[":
            raise CorpusError(f"{path}: expected a JSON array of {{title, text}} objects")
        reader.advance(1)
        number = 0
        while True:
            reader.skip_space()
            if reader.peek() == "]":
                return
            if number and not reader.expect(","):
                raise CorpusError(f"{path}, record {number + 1}: expected ',' or ']'")
            number += 1
            yield f"record {number}", reader.decode(decoder, f"record {number}")


class _Text:
    """A UTF-8 text buffer over a binary file, refilled as the JSON decoder needs more."""

    def __init__(self, fh: Any, path: Path) -> None:
        self.fh, self.path, self.buf, self.pos = fh, path, "", 0
        self._utf8 = codecs.getincrementaldecoder("utf-8")()

    def _fill(self) -> bool:
        block = self.fh.read(_CHUNK)
        try:
            text = self._utf8.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            raise CorpusError(f"{self.path}: not UTF-8 ({exc.reason})") from None
        if not block:
            return False
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return True

    def peek(self) -> str:
        while self.pos >= len(self.buf):
            if not self._fill():
                raise CorpusError(f"{self.path}: the JSON array is not closed")
        return self.buf[self.pos]

    def advance(self, n: int) -> None:
        self.pos += n

    def skip_space(self) -> None:
        while self.peek() in " \t\r\n":
            self.pos += 1

    def expect(self, char: str) -> bool:
        if self.peek() != char:
            return False
        self.pos += 1
        self.skip_space()
        return True

    def decode(self, decoder: json.JSONDecoder, where: str) -> Any:
        while True:
            try:
                value, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos < _MAX_RECORD and self._fill():
                    continue
                raise CorpusError(f"{self.path}, {where}: invalid JSON ({exc.msg})") from None
            except RecursionError:
                raise CorpusError(
                    f"{self.path}, {where}: invalid JSON (nested too deeply)"
                ) from None
            self.pos = end
            return value
